"""The docker pod runner against a real Docker engine: pods submitted over gRPC run as containers.

The engine is Debian's dockerd on a private socket (tests/support/docker_engine.py). Images are built
FROM scratch around a static busybox (tests/support/docker_images.py): the host's own (Debian's
busybox-static) and, for emulation, one of the other architecture at FOREIGN_BUSYBOX, run through QEMU binfmt.
"""

from __future__ import annotations

import pathlib
import struct
from typing import Callable, Iterator

import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core
from armada_client.log_client import JobLogClient

from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig
from armada_flyte.pod_runner.docker import LABEL_JOB_ID
from armada_flyte.pod_runner.pod_fence import PodFence

from support.docker_engine import DockerEngine
from support.docker_images import (
    FOREIGN_ARCH,
    HOST_ARCH,
    assert_moved_on_to_the_host,
    build_image,
    preferring_the_other_first,
    static_elf_architecture,
)
from support.pods import ARCH, ARM64_TOLERATION, item, pod, submit_one
from support.waiting import job_error, wait_for_state, wait_until

pytestmark = [pytest.mark.docker, pytest.mark.embedded_only]

FOREIGN_BUSYBOX = pathlib.Path(f"/usr/local/lib/armada-flyte-tests/busybox-{FOREIGN_ARCH}")
"""A static busybox for the other architecture; scripts/install-test-parts.sh puts it there."""
UNAME_MACHINE = {"amd64": "x86_64", "arm64": "aarch64"}
QEMU_BINFMT = {"amd64": "qemu-x86_64", "arm64": "qemu-aarch64"}
QUEUE = JOB_SET = "docker-executor"
CAP_CHOWN, CAP_NET_RAW = 0, 13
"""Bit numbers in a capability set (linux/capability.h)."""


@pytest.fixture(scope="module")
def emulated_image(docker_client, tmp_path_factory: pytest.TempPathFactory, missing_part: Callable[[str], None]) -> str:
    """linux/<other arch>: needs that architecture's static busybox and QEMU registered in binfmt_misc (F flag)."""
    if not FOREIGN_BUSYBOX.is_file() or static_elf_architecture(FOREIGN_BUSYBOX) != FOREIGN_ARCH:
        missing_part(
            f"no static {FOREIGN_ARCH} busybox at {FOREIGN_BUSYBOX} (scripts/install-test-parts.sh puts it there)"
        )
    entry = pathlib.Path("/proc/sys/fs/binfmt_misc") / QEMU_BINFMT[FOREIGN_ARCH]
    text = entry.read_text() if entry.is_file() else ""
    flags = next((line.split(":", 1)[1] for line in text.splitlines() if line.startswith("flags:")), "")
    if not text.startswith("enabled") or "F" not in flags:
        missing_part(
            f"QEMU for {FOREIGN_ARCH} is not registered in binfmt_misc with the F flag ({entry}): mount binfmt_misc, "
            f"apt-get install qemu-user-static binfmt-support, update-binfmts --enable {QEMU_BINFMT[FOREIGN_ARCH]}"
        )
    return build_image(docker_client, tmp_path_factory.mktemp("emulated"), FOREIGN_BUSYBOX, FOREIGN_ARCH, "busybox")


@pytest.fixture(scope="module")
def unrunnable_image(docker_client, tmp_path_factory: pytest.TempPathFactory) -> str:
    """linux/<other arch>, whose program is an ELF for a machine no kernel or QEMU runs: exec fails."""
    folder = tmp_path_factory.mktemp("unrunnable")
    program = folder / "busybox"
    header = struct.pack(
        "<4s5B7xHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0, 0, 2, 0xBEEF, 1, 0x10000, 64, 0, 0, 64, 56, 0, 64, 0, 0
    )
    program.write_bytes(header)
    program.chmod(0o755)
    return build_image(docker_client, folder, program, FOREIGN_ARCH, "unrunnable")


@pytest.fixture
def armada(
    docker_engine: DockerEngine, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[EmbeddedArmada, ArmadaClient]]:
    """An embedded server of the test's own with pod_runner="docker", reaching the test engine through DOCKER_HOST."""
    import grpc

    monkeypatch.setenv("DOCKER_HOST", docker_engine.base_url)
    with (
        EmbeddedArmada(EmbeddedConfig(pod_runner="docker", queues=(QUEUE,))) as server,
        grpc.insecure_channel(server.url) as channel,
    ):
        yield server, ArmadaClient(channel)


def busybox_pod(image: str, arch: str, *args: str, grace_seconds: int | None = None) -> core.PodSpec:
    """A pod on `arch`'s node set running `/bin/busybox ARGS` in `image`."""
    spec = pod(
        ["/bin/busybox"],
        args=args,
        node_selector={ARCH: arch},
        tolerations=[ARM64_TOLERATION],
        grace_seconds=grace_seconds,
    )
    spec.containers[0].image = image
    return spec


def submit(client: ArmadaClient, spec: core.PodSpec) -> str:
    return submit_one(client, QUEUE, JOB_SET, item(spec))


def binoculars_lines(server: EmbeddedArmada, job_id: str) -> list[str]:
    return [line.line for line in JobLogClient(server.url, job_id, disable_ssl=True).logs()]


def containers_of(docker_client, job_id: str) -> list:
    return docker_client.containers.list(all=True, filters={"label": f"{LABEL_JOB_ID}={job_id}"})


def test_a_pod_runs_as_a_container_and_its_stdout_is_the_jobs_log(armada, native_image, docker_client) -> None:
    server, client = armada
    job_id = submit(client, busybox_pod(native_image, HOST_ARCH, "sh", "-c", "echo hello from the container; uname -m"))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    assert binoculars_lines(server, job_id) == ["hello from the container", UNAME_MACHINE[HOST_ARCH]]
    assert containers_of(docker_client, job_id) == []


def test_a_non_zero_exit_is_failed_with_the_stderr_tail(armada, native_image) -> None:
    server, client = armada
    job_id = submit(
        client, busybox_pod(native_image, HOST_ARCH, "sh", "-c", "echo working; echo disk full >&2; exit 3")
    )
    wait_for_state(client, job_id, submit_pb2.FAILED)
    error = job_error(client, job_id)
    assert error.endswith(" failed with exit code 3 because Error: disk full\n")  # Armada's pod_status.go
    assert server.job(job_id).exit_code == 3
    assert sorted(server.logs(job_id)) == ["disk full", "working"]  # the two streams keep no order between them


def test_cancel_removes_the_container(armada, native_image, docker_client) -> None:
    server, client = armada
    job_id = submit(
        client, busybox_pod(native_image, HOST_ARCH, "sh", "-c", "echo started; exec sleep 300", grace_seconds=1)
    )
    wait_for_state(client, job_id, submit_pb2.RUNNING)
    wait_until(lambda: "started" in server.logs(job_id), what="the pod to start")
    assert [c.status for c in containers_of(docker_client, job_id)] == ["running"]
    client.cancel_jobs(queue=QUEUE, job_set_id=JOB_SET, job_id=job_id)
    wait_for_state(client, job_id, submit_pb2.CANCELLED)
    wait_until(lambda: not containers_of(docker_client, job_id), what="the container to be removed")


def test_a_pod_on_the_other_architecture_runs_emulated(armada, emulated_image) -> None:
    server, client = armada
    job_id = submit(client, busybox_pod(emulated_image, FOREIGN_ARCH, "uname", "-m"))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    assert binoculars_lines(server, job_id)[-1] == UNAME_MACHINE[FOREIGN_ARCH]
    assert server.job(job_id).node_group == FOREIGN_ARCH
    assert "under emulation" in server.job(job_id).note


def test_an_image_without_the_pods_architecture_fails_naming_both(armada, native_image) -> None:
    server, client = armada
    job_id = submit(client, busybox_pod(native_image, FOREIGN_ARCH, "true"))
    wait_for_state(client, job_id, submit_pb2.FAILED)
    error = job_error(client, job_id)
    assert (
        f"image {native_image} has no linux/{FOREIGN_ARCH} variant, which node set {FOREIGN_ARCH} needs: "
        f"Docker holds it for linux/{HOST_ARCH} only, and pulling it for linux/{FOREIGN_ARCH} failed: "
    ) in error
    assert f"pin the pod to {HOST_ARCH} nodes" in error


def test_a_foreign_program_the_host_cannot_run_fails_with_the_binfmt_fix(armada, unrunnable_image) -> None:
    server, client = armada
    job_id = submit(client, busybox_pod(unrunnable_image, FOREIGN_ARCH))
    wait_for_state(client, job_id, submit_pb2.FAILED)
    error = job_error(client, job_id)
    assert "because Error: exec /bin/busybox: exec format error\n" in error
    assert f"register QEMU for {FOREIGN_ARCH} in binfmt_misc with the F flag" in error


def test_the_connector_reports_an_exec_format_crash_as_the_missing_image_variant(docker_client, unrunnable_image):
    """Through the connector, as a local run polls it: the crash is said as the image variant the node lacks."""
    from flyteidl2.core.execution_pb2 import TaskExecution

    import armada_flyte
    from armada_flyte import ArmadaConfig
    from armada_flyte.connector.poll.crash_reasons import BUILD_BOTH
    from armada_flyte.connector.service import ArmadaConnector
    from armada_flyte.pod_runner.docker import DockerPodRunner

    from support.armada_templates import python_template, run, wait_for

    with EmbeddedArmada(EmbeddedConfig(pod_runner=DockerPodRunner(docker_client), queues=("flyte",))) as server:
        armada_flyte.configure(armada_url=server.url, node_groups_preset="embedded", ack_timeout_seconds=30)
        connector = ArmadaConnector()
        template = python_template("", ArmadaConfig(architecture=FOREIGN_ARCH))
        template.container.image = unrunnable_image
        del template.container.command[:]
        template.container.command.append("/bin/busybox")
        meta = run(connector.submit(template, "s3://flyte/raw/exec-format/a0/0"))
        resource = run(wait_for(connector, meta, {TaskExecution.FAILED, TaskExecution.RETRYABLE_FAILED}))
    assert resource.phase == TaskExecution.FAILED
    assert resource.message.startswith(f"image {unrunnable_image} has no linux/{FOREIGN_ARCH} variant: Armada job ")
    assert "exec /bin/busybox: exec format error" in resource.message
    assert resource.custom_info["fix"].startswith(f"build the image for both platforms (`{BUILD_BOTH} ...`")
    assert resource.message.endswith(f"\nTo fix: {resource.custom_info['fix']}")
    crash = resource.custom_info["wrong_architecture"]
    assert (crash["image"], crash["architecture"]) == (unrunnable_image, FOREIGN_ARCH)
    assert crash["evidence"].endswith("exec /bin/busybox: exec format error")


def test_a_preference_moves_on_from_an_architecture_the_image_lacks_in_the_same_attempt(docker_client, native_image):
    """The issue's case: an image built for the host's architecture only (its platforms not declared, the
    registry check off), preferring the other first. The docker pod runner can't start it there (no variant
    for that platform); the connector moves the task to the host's architecture at once, where it runs.
    On real Armada: tests/connector/test_architecture_preference.py."""
    from flyteidl2.core.execution_pb2 import TaskExecution

    import armada_flyte
    from armada_flyte.connector.service import ArmadaConnector
    from armada_flyte.pod_runner.docker import DockerPodRunner

    from support.armada_templates import run, wait_for

    with EmbeddedArmada(EmbeddedConfig(pod_runner=DockerPodRunner(docker_client), queues=("flyte",))) as server:
        armada_flyte.configure(armada_url=server.url, node_groups_preset="embedded", ack_timeout_seconds=30)
        connector = ArmadaConnector()
        template = preferring_the_other_first(native_image)
        meta = run(connector.submit(template, "s3://flyte/raw/moves-docker/a0/0"))
        resource = run(wait_for(connector, meta, {TaskExecution.SUCCEEDED, TaskExecution.FAILED}, timeout=120))
        run(connector.close())
    assert_moved_on_to_the_host(resource, native_image)
    assert meta.submitted_at


def test_secret_env_and_secret_volume_files_reach_the_container(armada, native_image) -> None:
    server, client = armada
    server.add_secret("docker-creds", {"api_key": "dk-value", "token": "dk-token"})
    spec = busybox_pod(native_image, HOST_ARCH, "sh", "-c", 'echo "$API_KEY"; cat /etc/creds/the-token')
    reference = core.SecretKeySelector(
        localObjectReference=core.LocalObjectReference(name="docker-creds"), key="api_key"
    )
    spec.containers[0].env.append(core.EnvVar(name="API_KEY", valueFrom=core.EnvVarSource(secretKeyRef=reference)))
    source = core.SecretVolumeSource(secretName="docker-creds", items=[core.KeyToPath(key="token", path="the-token")])
    spec.volumes.append(core.Volume(name="creds", volumeSource=core.VolumeSource(secret=source)))
    spec.containers[0].volumeMounts.append(core.VolumeMount(name="creds", mountPath="/etc/creds", readOnly=True))
    job_id = submit(client, spec)
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    assert binoculars_lines(server, job_id) == ["dk-value", "dk-token"]


def test_a_container_runs_fenced_no_net_raw_no_new_privileges_and_a_pids_limit(
    armada, native_image, docker_client
) -> None:
    server, client = armada
    spec = busybox_pod(
        native_image, HOST_ARCH, "sh", "-c", "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; sleep 30"
    )
    job_id = submit(client, spec)
    wait_for_state(client, job_id, submit_pb2.RUNNING)
    wait_until(lambda: len(server.logs(job_id)) == 2, what="the container to print its capabilities")
    (container,) = containers_of(docker_client, job_id)
    host = container.attrs["HostConfig"]
    client.cancel_jobs(queue=QUEUE, job_set_id=JOB_SET, job_id=job_id)
    status = dict(line.split(":\t") for line in server.logs(job_id))
    effective = int(status["CapEff"], 16)
    assert status["NoNewPrivs"] == "1"
    assert effective & (1 << CAP_NET_RAW) == 0 and effective & (1 << CAP_CHOWN)
    assert host["CapDrop"] == ["ALL"] and "NET_RAW" not in host["CapAdd"]
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert host["PidsLimit"] == PodFence().pids_limit
    assert {u["Name"]: u["Hard"] for u in host["Ulimits"]} == {"fsize": PodFence().file_size_limit}
