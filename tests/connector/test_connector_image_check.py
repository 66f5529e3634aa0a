"""The connector's opt-in submission check against a real registry and the embedded Armada server."""

from __future__ import annotations

import asyncio
import sys

import pytest
from flyteidl2.core import tasks_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

import armada_flyte
from armada_flyte import ArmadaConfig, ImagePlatformMismatch
from armada_flyte.spec import SubmissionSpec

from support.armada_templates import wait_for

pytestmark = pytest.mark.usefixtures("docker_config")


@pytest.fixture(scope="module")
def armada():
    from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

    with EmbeddedArmada(EmbeddedConfig(port=0, queues=("flyte",))) as server:
        yield server


def template(image: str, architecture: str, job_set_id: str = "images") -> tasks_pb2.TaskTemplate:
    task = tasks_pb2.TaskTemplate(type="armada")
    task.id.name = "demo.train"
    task.container.image = image
    task.container.command.extend([sys.executable, "-c", "pass"])
    task.container.resources.limits.add(name=tasks_pb2.Resources.CPU, value="100m")
    task.container.resources.limits.add(name=tasks_pb2.Resources.MEMORY, value="64Mi")
    spec = SubmissionSpec.from_config(
        ArmadaConfig(architecture=architecture, job_set_id=job_set_id), {"architecture": "task"}
    )
    task.custom.update(spec.to_custom())
    return task


def connector_for(armada, **settings):
    from armada_flyte.connector.service import ArmadaConnector

    armada_flyte.configure(armada_url=armada.url, node_groups_preset="embedded", check_image_platforms=True, **settings)
    return ArmadaConnector()


def test_arm64_task_on_an_amd64_only_image_is_refused_before_submitting(armada, images):
    connector = connector_for(armada)
    with pytest.raises(ImagePlatformMismatch) as info:
        asyncio.run(connector.submit(template(images.amd64_only, "arm64", job_set_id="refused"), "s3://b/raw"))
    assert not armada.plane.events.exists("flyte", "refused"), "a job was submitted"
    message = str(info.value)
    assert "demo.train" in message and images.amd64_only in message and "linux/amd64" in message
    assert "--platform linux/amd64,linux/arm64" in message


def test_arm64_task_on_a_multi_arch_index_is_submitted_and_runs(armada, images):
    connector = connector_for(armada)

    async def scenario():
        meta = await connector.create(template(images.multi, "arm64"), "s3://b/raw")
        return meta, await wait_for(connector, meta, {TaskExecution.SUCCEEDED, TaskExecution.FAILED})

    meta, resource = asyncio.run(scenario())
    assert meta.node_group == "arm64"
    assert resource.phase == TaskExecution.SUCCEEDED, resource.message


def test_unreachable_registry_warns_and_submits_by_default(armada, unreachable_host, caplog):
    connector = connector_for(armada)
    meta = asyncio.run(connector.create(template(f"{unreachable_host}/train:1", "arm64"), "s3://b/raw"))
    assert meta.job_id
    assert any("train:1" in record.getMessage() for record in caplog.records if record.levelname == "WARNING")


def test_unreachable_registry_blocks_when_the_admin_says_so(armada, unreachable_host):
    from armada_flyte.errors import RegistryUnreachable

    connector = connector_for(armada, image_check_blocks_when_unreachable=True)
    with pytest.raises(RegistryUnreachable):
        asyncio.run(connector.create(template(f"{unreachable_host}/train:1", "arm64"), "s3://b/raw"))


def test_any_on_a_single_arch_image_is_narrowed_to_it_by_the_registry(armada, images):
    connector = connector_for(armada)

    async def scenario():
        meta = await connector.create(template(images.arm64_only, "any", job_set_id="narrowed"), "s3://b/raw")
        return meta, await wait_for(connector, meta, {TaskExecution.SUCCEEDED, TaskExecution.FAILED})

    meta, resource = asyncio.run(scenario())
    assert (meta.architecture, meta.any_of, meta.node_group) == ("arm64", "arm64", "arm64")
    assert resource.phase == TaskExecution.SUCCEEDED, resource.message
    assert resource.custom_info["architecture"] == "arm64"
    assert resource.custom_info["architecture_known_by"].startswith("the request")


def test_any_on_a_multi_arch_index_keeps_both(armada, images):
    meta = asyncio.run(connector_for(armada).create(template(images.multi, "any"), "s3://b/raw"))
    assert (meta.architecture, meta.any_of) == ("", "amd64,arm64")


def test_any_on_an_image_the_platform_cannot_run_is_refused_naming_both_sets(armada, images, tmp_path):
    from armada_flyte import NoCommonArchitecture

    groups = tmp_path / "groups.yaml"
    groups.write_text("architectures:\n  arm64:\n    tolerations: [{key: kubernetes.io/arch, value: arm64}]\n")
    from armada_flyte.connector.service import ArmadaConnector

    armada_flyte.configure(armada_url=armada.url, node_groups_file=str(groups), check_image_platforms=True)
    connector = ArmadaConnector()
    with pytest.raises(NoCommonArchitecture) as info:
        asyncio.run(connector.submit(template(images.amd64_only, "any", job_set_id="nowhere"), "s3://b/raw"))
    assert not armada.plane.events.exists("flyte", "nowhere"), "a job was submitted"
    message = str(info.value)
    assert images.amd64_only in message and "has amd64" in message and "offers arm64" in message
    meta = asyncio.run(connector.create(template(images.amd64_only, "any", job_set_id="nowhere"), "s3://b/raw"))
    assert meta.refusal_code == "NoCommonArchitecture" and not meta.job_id
