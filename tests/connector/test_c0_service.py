"""The connector as Flyte's `c0` service: loaded through the `flyte.connectors` entry point,
driven over gRPC the way a Flyte backend drives it."""

from __future__ import annotations

import pathlib
from importlib.metadata import entry_points

import grpc
import pytest
from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

from armada_flyte import ArmadaConfig

from support.armada_templates import execution_metadata, python_template
from support.c0_service import ARMADA_TASKS, free_port, poll_until_done, running_c0
from support.error_pb_pods import ERROR_PB_WRITER
from support.service_links import service_link_env

ARMADA = ARMADA_TASKS


@pytest.mark.pure
def test_entry_point_names_the_connector_module():
    (entry,) = [e for e in entry_points(group="flyte.connectors") if e.name == "armada"]
    assert entry.value == "armada_flyte.connector.service"


def test_c0_starts_beside_the_shipped_service_with_service_links_on(armada, blob, tmp_path):
    """Kubernetes injects ARMADA_FLYTE_CONNECTOR_* for the Service; c0 must still answer calls."""
    import yaml

    service = yaml.safe_load((pathlib.Path(__file__).parents[2] / "deploy/kubernetes/service.yaml").read_text())
    env = {"ARMADA_URL": armada.url, "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded", **service_link_env(service)}
    with running_c0(env, tmp_path / "c0.log") as stub:
        request = connector_pb2.CreateTaskRequest(
            template=python_template("pass", ArmadaConfig(architecture="amd64")),
            output_prefix="s3://bucket/raw/links/a0/0",
            task_execution_metadata=execution_metadata(run="links"),
        )
        assert stub.CreateTask(request, timeout=30).resource_meta


def test_c0_whose_port_is_taken_before_it_binds_it_is_started_again_on_another(armada, tmp_path, monkeypatch):
    """The port race of a busy machine, made certain: the first port handed to c0 is held by a listener."""
    import socket

    from support import c0_service

    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    ports = [held.getsockname()[1]]
    monkeypatch.setattr(c0_service, "free_port", lambda: ports.pop() if ports else free_port())
    env = {"ARMADA_URL": armada.url, "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded"}
    with held, running_c0(env, tmp_path / "c0.log") as stub:
        request = connector_pb2.GetTaskRequest(resource_meta=b"{}", task_category=ARMADA)
        assert stub.GetTask(request, timeout=30).resource  # answered by the c0 on the other port
    assert "Address already in use" in (tmp_path / "c0.log").read_text()  # the first start failed


DONE = (TaskExecution.SUCCEEDED, TaskExecution.FAILED)


def test_c0_creates_polls_and_deletes_armada_jobs(c0):
    request = connector_pb2.CreateTaskRequest(
        template=python_template("print('from c0')", ArmadaConfig(architecture="arm64")),
        output_prefix="s3://bucket/raw/run1/a0/0",
        task_execution_metadata=execution_metadata(run="c0run"),
    )
    meta = c0.CreateTask(request, timeout=30).resource_meta
    assert b'"architecture": "arm64"' in meta and b'"node_group": "arm64"' in meta

    resource = poll_until_done(c0, meta, DONE, 60)
    assert resource.phase == TaskExecution.SUCCEEDED, resource.message
    assert resource.custom_info["node_group"] == "arm64"
    c0.DeleteTask(connector_pb2.DeleteTaskRequest(resource_meta=meta, task_category=ARMADA), timeout=30)


def test_c0_reports_armadas_refusal_to_the_backend_as_a_permanent_failure(c0):
    # Flyte's webapi launcher.go turns every CreateTask error into a retryable failure, whatever
    # its gRPC code, so a refusal no retry can fix comes back from the first GetTask as FAILED.
    request = connector_pb2.CreateTaskRequest(
        template=python_template("pass", ArmadaConfig(architecture="arm64", queue="missing")),
        output_prefix="s3://bucket/raw",
    )
    meta = c0.CreateTask(request, timeout=30).resource_meta
    resource = c0.GetTask(connector_pb2.GetTaskRequest(resource_meta=meta, task_category=ARMADA), timeout=30).resource
    assert resource.phase == TaskExecution.FAILED
    assert 'could not find queue "missing"' in resource.message
    assert resource.custom_info["error"]["code"] == "SubmissionRefused"
    assert resource.custom_info["error"]["recoverable"] is False
    # Nothing was submitted, so the backend's abort has nothing to cancel.
    c0.DeleteTask(connector_pb2.DeleteTaskRequest(resource_meta=meta, task_category=ARMADA), timeout=30)


def test_c0_still_raises_a_transient_create_error_so_the_backend_retries_it(tmp_path):
    unreachable = f"127.0.0.1:{free_port()}"
    with running_c0({"ARMADA_URL": unreachable, "ARMADA_FLYTE_GRPC_RETRIES": "0"}, tmp_path / "c0.log") as stub:
        request = connector_pb2.CreateTaskRequest(template=python_template("pass"), output_prefix="s3://bucket/raw")
        with pytest.raises(grpc.RpcError) as info:
            stub.CreateTask(request, timeout=60)
    assert "unavailable" in info.value.details()


def test_c0_narrows_a_preference_whose_image_cannot_be_read_to_the_fallback_set_by_its_environment(
    armada, blob, tmp_path, request
):
    """ARMADA_FLYTE_FALLBACK_ARCHITECTURE over the embedded preset (which sets none), the image's registry down:
    the arm64-first preference runs on amd64 alone, and the backend's GetTask says why."""
    import socket

    from armada_flyte.local.stack import ACCESS_KEY, BLOB_CREDENTIALS_SECRET, SECRET_KEY

    from support.c0_service import c0_env
    from support.real_armada import uses_real_armada

    env = c0_env(armada.url, blob.endpoint, check_image_platforms="true", fallback_architecture="amd64")
    if not uses_real_armada(request.config):  # a bed's executor holds it from the start (as the c0 fixture)
        armada.add_secret(BLOB_CREDENTIALS_SECRET, {"access_key_id": ACCESS_KEY, "secret_access_key": SECRET_KEY})
    log = tmp_path / "c0.log"
    # The registry's port is held bound but not listening: connections are refused, and nothing else
    # (c0's own ports among them) can take it meanwhile.
    with socket.socket() as registry:
        registry.bind(("127.0.0.1", 0))
        image = f"127.0.0.1:{registry.getsockname()[1]}/train:1"
        resource, meta = _fallback_run(env, log, image)
    fallback = resource.custom_info["fallback"]
    assert fallback["architecture"] == "amd64"
    assert f"the platforms of image {image} could not be read at submit" in fallback["why"]
    assert "RegistryUnreachable" in fallback["why"]
    assert f"Narrowed to amd64, the admin's fallback architecture: {fallback['why']}" in resource.message
    assert b'"architecture": "amd64"' in meta and b'"spill_jobs": ""' in meta, meta
    assert "the admin's fallback architecture" in log.read_text()  # c0's log says it too


def _fallback_run(env: dict[str, str], log: pathlib.Path, image: str) -> tuple[object, bytes]:
    """Create the arm64-first task of `image` through a c0 of `env`, poll it to its end, delete it."""
    with running_c0(env, log) as stub:
        template = python_template("print('on the fallback')", ArmadaConfig(architecture=["arm64", "amd64"]))
        template.container.image = image
        request = connector_pb2.CreateTaskRequest(
            template=template,
            output_prefix="s3://bucket/raw/fallback/a0/0",
            task_execution_metadata=execution_metadata(run="fallback"),
        )
        try:
            meta = stub.CreateTask(request, timeout=60).resource_meta
        except grpc.RpcError as exc:
            raise AssertionError(f"CreateTask failed: {exc}\nc0's log:\n{log.read_text()[-4000:]}") from None
        resource = poll_until_done(stub, meta, DONE, 60, explain=lambda: f"c0's log:\n{log.read_text()[-4000:]}")
        assert resource.phase == TaskExecution.SUCCEEDED, resource.message
        stub.DeleteTask(connector_pb2.DeleteTaskRequest(resource_meta=meta, task_category=ARMADA), timeout=30)
    return resource, meta


# What a0 does when the user's function raises: write error.pb beside the outputs, exit 0.
WRITE_ERROR_PB = (
    ERROR_PB_WRITER
    + """
write_error_pb(execution_pb2.ContainerError(code="ValueError", message="bad input: -1 samples"))
"""
)


def test_c0_reads_error_pb_with_its_blob_settings_and_fails_the_task(c0):
    template = python_template(WRITE_ERROR_PB)
    template.container.args.extend(["--outputs-path", "s3://flyte/raw/c0run/a1/0"])
    request = connector_pb2.CreateTaskRequest(
        template=template,
        output_prefix="s3://flyte/raw/c0run/a1/0",
        task_execution_metadata=execution_metadata(run="c0run", action="a1"),
    )
    meta = c0.CreateTask(request, timeout=30).resource_meta
    resource = poll_until_done(c0, meta, DONE, 60)
    assert resource.phase == TaskExecution.FAILED
    assert "ValueError: bad input: -1 samples" in resource.message
