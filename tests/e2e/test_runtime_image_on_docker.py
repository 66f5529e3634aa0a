"""The multi-arch runtime image, for real: one Flyte task per architecture through the connector into the
embedded server with the docker pod runner, both from the same image reference.

The image is the one scripts/prepare-image-parts.sh builds (buildx on BuildKit, Debian base) and
pushes to its registry on 127.0.0.1, named by ARMADA_FLYTE_TEST_RUNTIME_IMAGE. The Docker engine
is the tests' own dockerd (tests/support/docker_engine.py); it pulls from 127.0.0.1 over plain
HTTP, as Docker treats 127.0.0.0/8 as an insecure registry by default. The arm64 container runs
under QEMU (binfmt_misc, F flag) on an amd64 host, and the other way round on arm64.
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import sys
from typing import Iterator

import pytest
from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

from armada_flyte.admin.cli import main
from armada_flyte.local import journal
from armada_flyte.local.stack import ACCESS_KEY, BLOB_CREDENTIALS_SECRET, SECRET_KEY

from support import real_parts
from support.backend_templates import registered_template
from support.c0_service import poll_until_done, running_c0
from support.docker_engine import DockerEngine, EngineUnavailable
from support.flyte_metadata import execution_metadata

pytestmark = [pytest.mark.e2e, pytest.mark.docker]

PROJECT = pathlib.Path(__file__).parent / "project"
IMAGE_ENV = "ARMADA_FLYTE_TEST_RUNTIME_IMAGE"
DEADLINE_SECONDS = 600
"""The first pull of both platforms and an emulated Python start are slow on a loaded 2-core machine."""


@pytest.fixture(scope="module")
def runtime_image() -> str:
    image = os.environ.get(IMAGE_ENV)
    if not image:
        real_parts.missing_part(
            f"no runtime image: {IMAGE_ENV} is unset (scripts/test.sh sets it under CI through "
            'scripts/prepare-image-parts.sh; or eval "$(scripts/prepare-image-parts.sh start)")'
        )
    return image


@pytest.fixture(scope="module")
def docker_stack(runtime_image: str) -> Iterator[object]:
    """The local stack with pod_runner="docker", on a Docker engine of the tests' own."""
    from armada_flyte.local.stack import local_stack

    try:
        engine = DockerEngine.start()
    except EngineUnavailable as exc:
        real_parts.missing_part(str(exc))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DOCKER_HOST", engine.base_url)
        patch.setenv(IMAGE_ENV, runtime_image)
        try:
            with local_stack(pod_runner="docker", configure_connector=False) as stack:
                yield stack
        finally:
            engine.stop()


@pytest.fixture
def run_task(docker_stack):
    import flyte

    from armada_flyte import configure

    # The connector also reads the image's platforms from its registry before it submits.
    configure(**docker_stack.connector_settings(), check_image_platforms=True)
    journal.clear()
    sys.path.insert(0, str(PROJECT))
    docker_stack.init_flyte(PROJECT)

    def _run(task):
        run = flyte.with_runcontext(mode="local", raw_data_path=docker_stack.raw_data_path).run(task)
        outputs = run.outputs()
        return outputs[0] if isinstance(outputs, tuple) else outputs

    yield _run
    sys.path.remove(str(PROJECT))
    sys.modules.pop("machines", None)


@pytest.mark.timeout(DEADLINE_SECONDS)
@pytest.mark.parametrize(("architecture", "machine"), [("amd64", "x86_64"), ("arm64", "aarch64")])
def test_a_flyte_task_runs_in_the_runtime_image_on_each_architecture(
    run_task, docker_stack, runtime_image, architecture, machine
):
    import machines

    task = {"amd64": machines.machine_on_amd64, "arm64": machines.machine_on_arm64}[architecture]
    assert machines.IMAGE == runtime_image
    assert run_task(task) == f"{machine} uid=1000"
    (job,) = journal.jobs()
    assert (job.architecture, job.node_group, job.outcome) == (architecture, architecture, "SUCCEEDED")
    served = docker_stack.server.job(job.job_id)
    assert (served.node_group, served.architecture) == (architecture, architecture)
    # The docker pod runner ran the pod as a linux/<architecture> container of this image, pulled from the registry.
    assert docker_stack.server.plane.queries.find_job(job.job_id).pod.containers[0].image == runtime_image


def test_image_inspect_lists_both_platforms_of_the_runtime_image(runtime_image, capsys):
    assert main(["image", "inspect", runtime_image]) == 0
    listed = capsys.readouterr().out.split()
    assert {"linux/amd64", "linux/arm64"} <= set(listed)


def test_doctor_finds_both_architectures_in_the_runtime_image(runtime_image, capsys):
    assert main(["doctor", "--preset", "embedded", "--runtime-image", runtime_image, "--json"]) == 0
    findings = json.loads(capsys.readouterr().out)["findings"]
    image_checks = [f for f in findings if f["check"] == "runtime-image.platforms"]
    assert all(f["ok"] for f in image_checks)
    assert sorted(f["message"] for f in image_checks) == [
        "node group amd64 (amd64): the runtime image has linux/amd64",
        "node group arm64 (arm64): the runtime image has linux/arm64",
    ]


@pytest.mark.timeout(DEADLINE_SECONDS)
def test_the_arm64_task_runs_in_the_runtime_image_through_c0(docker_stack, runtime_image, tmp_path):
    """The production path: the registered template through a real `c0` over gRPC, the pod emulated as arm64."""
    sys.path.insert(0, str(PROJECT))
    try:
        import machines
        from flyte._internal.runtime import convert, io

        docker_stack.init_flyte(PROJECT)
        prefix = f"s3://{docker_stack.bucket}/image-c0/r1/a1/0"
        task = machines.machine_on_arm64

        async def prepare():
            inputs = await convert.convert_from_native_to_inputs(task.native_interface)
            await io.upload_inputs(inputs, io.inputs_path(prefix))
            return await registered_template(PROJECT, task, prefix)

        template = asyncio.run(prepare())
        assert template.container.image == runtime_image
        env = {
            "ARMADA_URL": docker_stack.armada_url,
            "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded",
            "ARMADA_FLYTE_CHECK_IMAGE_PLATFORMS": "true",
            "FLYTE_BLOB_ENDPOINT": docker_stack.blob_endpoint,
            "FLYTE_BLOB_ACCESS_KEY": ACCESS_KEY,
            "FLYTE_BLOB_SECRET_KEY": SECRET_KEY,
            "ARMADA_FLYTE_BLOB_CREDENTIALS_SECRET": BLOB_CREDENTIALS_SECRET,
        }
        with running_c0(env, tmp_path / "c0.log") as c0:
            request = connector_pb2.CreateTaskRequest(
                template=template,
                output_prefix=prefix,
                task_execution_metadata=execution_metadata("r1", "a1", task="machine_on_arm64"),
            )
            meta = c0.CreateTask(request, timeout=60).resource_meta
            done = (TaskExecution.SUCCEEDED, TaskExecution.FAILED)
            resource = poll_until_done(c0, meta, done, DEADLINE_SECONDS - 60, interval=0.2)
        assert resource.phase == TaskExecution.SUCCEEDED, resource.message
        assert resource.custom_info["node_group"] == "arm64"

        async def result():
            outputs = await io.load_outputs(io.outputs_path(prefix))
            return await convert.convert_outputs_to_native(task.interface, outputs)

        assert asyncio.run(result()) == "aarch64 uid=1000"
    finally:
        sys.path.remove(str(PROJECT))
        sys.modules.pop("machines", None)
