"""The process pod runner: each pod runs for real, as a local process in a sandbox of its own.

Paths under /opt/flyte/ are the pod's own: they map into its sandbox wherever they appear in
args, env and the working directory. HOME and TMPDIR are in the sandbox too, and PATH starts
with this Python's directory so Flyte's `a0` is found.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core

from armada_flyte.architecture import host_architecture_name as host_architecture
from armada_flyte.embedded.services.messages import NOTE_ANNOTATION
from armada_flyte.pod_runner.process import ProcessPodRunner

from support.pods import ARCH, ARM64_TOLERATION, item, pod, python, submit_one
from support.process_checks import is_alive, pids_in_log
from support.waiting import job_error, stored_job, wait_for_state, wait_until

pytestmark = pytest.mark.embedded_only

SUCCEEDED = submit_pb2.SUCCEEDED
REPORT = (
    "import json, os, shutil, sys; "
    "print(json.dumps({'argv': sys.argv[1:], 'cwd': os.getcwd(), 'env': dict(os.environ), 'a0': shutil.which('a0')}))"
)


def run_and_report(armada, client: ArmadaClient, queue: str, job_set: str, spec: core.PodSpec) -> tuple[str, dict]:
    job_id = submit_one(client, queue, job_set, item(spec))
    wait_for_state(client, job_id, SUCCEEDED)
    report = next(line for line in armada.logs(job_id) if line.startswith("{"))
    return job_id, json.loads(report)


def test_opt_flyte_in_args_maps_into_the_sandbox(embedded_armada, client, queue, job_set) -> None:
    code = "import os, sys; open(os.path.join(sys.argv[1], 'bundle.txt'), 'w').write('code')"
    job_id = submit_one(client, queue, job_set, item(pod(python(code), args=["/opt/flyte/"])))
    wait_for_state(client, job_id, SUCCEEDED)
    sandbox = embedded_armada.sandbox_of(job_id)
    assert (sandbox / "opt/flyte/bundle.txt").read_text() == "code"
    assert not pathlib.Path("/opt/flyte/bundle.txt").exists()


def test_private_paths_map_in_args_and_env_but_other_paths_do_not(embedded_armada, client, queue, job_set) -> None:
    spec = pod(
        python(REPORT),
        args=["--dest", "/opt/flyte/", "--inputs=/opt/flyte/in.pb", "/opt/flyteish", "/tmp/keep"],
        env={"CODE_DIR": "/opt/flyte/code", "OTHER": "/var/data"},
    )
    job_id, report = run_and_report(embedded_armada, client, queue, job_set, spec)
    sandbox = str(embedded_armada.sandbox_of(job_id))
    assert report["argv"] == [
        "--dest",
        f"{sandbox}/opt/flyte/",
        f"--inputs={sandbox}/opt/flyte/in.pb",
        "/opt/flyteish",
        "/tmp/keep",
    ]
    assert report["env"]["CODE_DIR"] == f"{sandbox}/opt/flyte/code"
    assert report["env"]["OTHER"] == "/var/data"


def test_home_tmpdir_and_working_dir_are_inside_the_sandbox(embedded_armada, client, queue, job_set) -> None:
    job_id, report = run_and_report(
        embedded_armada, client, queue, job_set, pod(python(REPORT), working_dir="/opt/flyte/work")
    )
    sandbox = embedded_armada.sandbox_of(job_id)
    assert report["cwd"] == str(sandbox / "opt/flyte/work")
    assert report["env"]["HOME"] == str(sandbox / "home")
    assert report["env"]["TMPDIR"] == str(sandbox / "tmp")


def test_each_pod_gets_a_sandbox_of_its_own(embedded_armada, client, queue, job_set) -> None:
    first, _ = run_and_report(embedded_armada, client, queue, job_set, pod(python(REPORT)))
    second, _ = run_and_report(embedded_armada, client, queue, job_set, pod(python(REPORT)))
    assert embedded_armada.sandbox_of(first) != embedded_armada.sandbox_of(second)


def test_path_starts_with_this_pythons_directory_so_a0_is_found(embedded_armada, client, queue, job_set) -> None:
    _, report = run_and_report(
        embedded_armada, client, queue, job_set, pod(python(REPORT), env={"PATH": "/usr/bin:/bin"})
    )
    python_dir = os.path.dirname(sys.executable)
    assert report["env"]["PATH"].split(os.pathsep)[:2] == [python_dir, "/usr/bin"]
    assert report["a0"] == os.path.join(python_dir, "a0")


def test_pod_env_is_passed_and_host_env_is_not(embedded_armada, client, queue, job_set, monkeypatch) -> None:
    monkeypatch.setenv("ARMADA_FLYTE_TEST_SECRET", "host-only")
    _, report = run_and_report(embedded_armada, client, queue, job_set, pod(python(REPORT), env={"GREETING": "hello"}))
    assert report["env"]["GREETING"] == "hello"
    assert "ARMADA_FLYTE_TEST_SECRET" not in report["env"]


def test_field_refs_give_the_node_and_pod_name(embedded_armada, client, queue, job_set) -> None:
    spec = pod(python(REPORT))
    spec.containers[0].env.append(
        core.EnvVar(
            name="NODE", valueFrom=core.EnvVarSource(fieldRef=core.ObjectFieldSelector(fieldPath="spec.nodeName"))
        )
    )
    job_id, report = run_and_report(embedded_armada, client, queue, job_set, spec)
    assert report["env"]["NODE"] == embedded_armada.job(job_id).node
    assert report["env"]["HOSTNAME"] == f"armada-{job_id}-0"


def test_a_command_that_cannot_start_fails_with_the_reason(embedded_armada, client, queue, job_set) -> None:
    job_id = submit_one(client, queue, job_set, item(pod(["no-such-command-anywhere"])))
    wait_for_state(client, job_id, submit_pb2.FAILED)
    assert "no-such-command-anywhere" in job_error(client, job_id)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_a_container_starts_with_no_signal_ignored_or_blocked(embedded_armada, client, queue, job_set) -> None:
    # The shim is Python, which ignores SIGPIPE and SIGXFSZ, and a server started as a shell's background
    # job has SIGINT and SIGQUIT ignored (the test suite under scripts/test-under-load.sh is one); a
    # container runtime starts the container with every signal at its default and none blocked, so
    # `yes | head` and Ctrl-C end it as they would in a pod.
    command = "grep -E '^Sig(Ign|Blk)' /proc/self/status"
    job_id = submit_one(client, queue, job_set, item(pod(["sh", "-c", command])))
    wait_for_state(client, job_id, SUCCEEDED)
    lines = {line.split()[0]: line for line in embedded_armada.logs(job_id) if line.startswith("Sig")}
    assert set(lines) == {"SigIgn:", "SigBlk:"}, lines
    assert all(int(line.split()[1], 16) == 0 for line in lines.values()), lines


def _foreign_pod() -> tuple[core.PodSpec, str]:
    """A pod for the node set whose architecture this host is not."""
    if host_architecture() == "arm64":
        return pod(["true"], node_selector={ARCH: "amd64"}), "amd64"
    return pod(["true"], node_selector={ARCH: "arm64"}, tolerations=[ARM64_TOLERATION]), "arm64"


def test_a_pod_of_another_architecture_says_it_ran_natively(embedded_armada, client, queue, job_set) -> None:
    spec, arch = _foreign_pod()
    job_id = submit_one(client, queue, job_set, item(spec))
    wait_for_state(client, job_id, SUCCEEDED)
    view = embedded_armada.job(job_id)
    assert view.architecture == arch and "natively" in view.note
    assert embedded_armada.logs(job_id)[0].startswith("[armada-flyte dev] node set")
    assert "natively" in stored_job(client, job_id).job_spec.annotations[NOTE_ANNOTATION]


def test_a_pod_of_the_host_architecture_carries_no_note(embedded_armada, client, queue, job_set) -> None:
    spec = pod(["true"], node_selector={ARCH: host_architecture()}, tolerations=[ARM64_TOLERATION])
    job_id = submit_one(client, queue, job_set, item(spec))
    wait_for_state(client, job_id, SUCCEEDED)
    assert embedded_armada.job(job_id).note == ""


def test_a_pod_without_a_command_fails_saying_the_entrypoint_is_unknown(client, queue, job_set) -> None:
    job_id = submit_one(client, queue, job_set, item(pod([])))
    wait_for_state(client, job_id, submit_pb2.FAILED)
    assert "cannot run the image's own entrypoint" in job_error(client, job_id)


@pytest.mark.embedded_only
def test_only_the_newest_finished_sandboxes_are_kept(own_armada, tmp_path: pathlib.Path) -> None:
    executor = ProcessPodRunner(sandbox_root=tmp_path, kept_sandboxes=1)
    armada, client = own_armada(pod_runner=executor)
    first = submit_one(client, "conformance", "js", item(pod(python("print('one')"))))
    wait_for_state(client, first, submit_pb2.SUCCEEDED)
    assert executor.sandbox_of(first).is_dir()
    second = submit_one(client, "conformance", "js", item(pod(python("print('two')"))))
    wait_for_state(client, second, submit_pb2.SUCCEEDED)
    wait_until(lambda: not executor.sandbox_of(first).exists(), what="the older sandbox to be removed")
    assert executor.sandbox_of(second).is_dir()


def test_a_pod_whose_main_process_ends_leaves_no_process_behind(embedded_armada, client, queue, job_set) -> None:
    """The shim kills and reaps what the main process left (a child in a session of its own included) before it
    reports the end, and says so; the runner then skips its own search of /proc (process.py, `_wait_for`)."""
    code = (
        "import subprocess, sys; "
        "left = subprocess.Popen(['sleep', '300']); "
        "detached = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'], start_new_session=True); "
        "print('left', left.pid, flush=True); print('detached', detached.pid, flush=True)"
    )
    job_id = submit_one(client, queue, job_set, item(pod(python(code))))
    wait_for_state(client, job_id, SUCCEEDED)
    lines = embedded_armada.logs(job_id)
    pids = pids_in_log(lines, "left") + pids_in_log(lines, "detached")
    assert len(pids) == 2, lines
    still_running = [pid for pid in pids if is_alive(pid)]
    assert not still_running, f"processes of job {job_id} outlived it: {still_running}"
