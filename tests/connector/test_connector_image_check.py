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


# ---- the admin's fallback architecture: the registry can't be read ----
# Each submits from an output prefix of its own: Armada answers a client id it has seen (the prefix's) with
# the job it already has.
@pytest.mark.parametrize("blocks", [False, True])
def test_a_preference_whose_image_cannot_be_read_runs_on_the_fallback_saying_why(armada, unreachable_host, blocks):
    """The fallback takes precedence over image_check_blocks_when_unreachable."""
    connector = connector_for(armada, fallback_architecture="amd64", image_check_blocks_when_unreachable=blocks)
    image = f"{unreachable_host}/train:1"

    async def scenario():
        meta = await connector.create(
            template(image, ["arm64", "amd64"], job_set_id=f"fallback-{blocks}"), f"s3://b/raw/fallback-{blocks}"
        )
        return meta, await wait_for(connector, meta, {TaskExecution.SUCCEEDED, TaskExecution.FAILED})

    meta, resource = asyncio.run(scenario())
    assert (meta.architecture, meta.node_group, meta.spill_jobs, meta.refusal_code) == ("amd64", "amd64", "", "")
    assert resource.phase == TaskExecution.SUCCEEDED, resource.message
    node = resource.custom_info["node"]
    assert node.startswith("amd64-"), node  # it ran on the fallback's node group, not on arm64's first
    why = resource.custom_info["fallback"]["why"]
    assert resource.custom_info["fallback"]["architecture"] == "amd64"
    assert f"the platforms of image {image} could not be read at submit" in why and "RegistryUnreachable" in why
    assert f"Narrowed to amd64, the admin's fallback architecture: {why}" in resource.message


def test_any_whose_image_cannot_be_read_is_narrowed_to_the_fallback_set_in_the_node_group_file(
    armada, unreachable_host, tmp_path, caplog
):
    groups = tmp_path / "groups.yaml"
    groups.write_text("fallback_architecture: arm64\narchitectures: {amd64: {}, arm64: {}}\n")
    from armada_flyte.connector.service import ArmadaConnector

    armada_flyte.configure(armada_url=armada.url, node_groups_file=str(groups), check_image_platforms=True)
    meta = asyncio.run(
        ArmadaConnector().create(template(f"{unreachable_host}/train:1", "any"), "s3://b/raw/fallback-any")
    )
    assert (meta.architecture, meta.any_of, meta.node_group) == ("arm64", "arm64", "arm64")
    assert "could not be read at submit" in meta.fallback
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "train:1" in r.getMessage()]
    said = f"narrowed to arm64 of amd64, arm64, the admin's fallback architecture (fallback_architecture in {groups})"
    assert any(said in w for w in warned), warned


def test_a_registry_that_refuses_the_credentials_counts_as_unreadable(armada, basic_registry):
    connector = connector_for(armada, fallback_architecture="amd64", image_check_blocks_when_unreachable=True)
    meta = asyncio.run(connector.create(template(basic_registry.multi, ["arm64", "amd64"]), "s3://b/raw/fallback-auth"))
    assert (meta.architecture, meta.refusal_code) == ("amd64", "")
    assert "RegistryAuthFailed" in meta.fallback


def test_a_pinned_task_is_unaffected_by_the_fallback(armada, unreachable_host):
    from armada_flyte.errors import RegistryUnreachable

    connector = connector_for(armada, fallback_architecture="amd64", image_check_blocks_when_unreachable=True)
    with pytest.raises(RegistryUnreachable):
        asyncio.run(connector.create(template(f"{unreachable_host}/train:1", "arm64"), "s3://b/raw"))
    connector = connector_for(armada, fallback_architecture="amd64", image_check_blocks_when_unreachable=False)
    meta = asyncio.run(connector.create(template(f"{unreachable_host}/train:1", "arm64"), "s3://b/raw/fallback-pinned"))
    assert (meta.architecture, meta.fallback) == ("arm64", "")


def test_a_readable_registry_is_followed_and_the_fallback_not_used(armada, images):
    connector = connector_for(armada, fallback_architecture="amd64")
    meta = asyncio.run(
        connector.create(template(images.arm64_only, ["amd64", "arm64"]), "s3://b/raw/fallback-readable")
    )
    assert (meta.architecture, meta.fallback) == ("arm64", "")
