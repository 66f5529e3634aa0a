"""The connector as Flyte's `c0` service: loaded through the `flyte.connectors` entry point,
driven over gRPC the way a Flyte backend drives it."""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import sys
import time
from importlib.metadata import entry_points

import grpc
import pytest
from flyteidl2.connector import connector_pb2, service_pb2_grpc
from flyteidl2.core.execution_pb2 import TaskExecution

from armada_flyte import ArmadaConfig

from armada_templates import execution_metadata, python_template

ARMADA = connector_pb2.TaskCategory(name="armada", version=0)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_entry_point_names_the_connector_module():
    (entry,) = [e for e in entry_points(group="flyte.connectors") if e.name == "armada"]
    assert entry.value == "armada_flyte.connector"


@pytest.fixture
def c0(armada, tmp_path):
    port = _free_port()
    env = {
        **os.environ,
        "ARMADA_URL": armada.url,
        "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded",
    }
    c0_bin = pathlib.Path(sys.executable).parent / "c0"
    log = (tmp_path / "c0.log").open("w")
    process = subprocess.Popen(
        [str(c0_bin), "--port", str(port), "--prometheus_port", str(_free_port())],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=60)
        yield service_pb2_grpc.AsyncConnectorServiceStub(channel)
    finally:
        channel.close()
        process.terminate()
        process.wait(timeout=30)
        log.close()


def test_c0_creates_polls_and_deletes_armada_jobs(c0):
    request = connector_pb2.CreateTaskRequest(
        template=python_template("print('from c0')", ArmadaConfig(architecture="arm64")),
        output_prefix="s3://bucket/raw/run1/a0/0",
        task_execution_metadata=execution_metadata(run="c0run"),
    )
    meta = c0.CreateTask(request, timeout=30).resource_meta
    assert b'"architecture": "arm64"' in meta and b'"node_group": "arm64"' in meta

    deadline = time.monotonic() + 60
    while True:
        resource = c0.GetTask(connector_pb2.GetTaskRequest(resource_meta=meta, task_category=ARMADA), timeout=30).resource
        if resource.phase in (TaskExecution.SUCCEEDED, TaskExecution.FAILED):
            break
        assert time.monotonic() < deadline, resource.message
        time.sleep(0.1)
    assert resource.phase == TaskExecution.SUCCEEDED, resource.message
    assert resource.custom_info["node_group"] == "arm64"
    c0.DeleteTask(connector_pb2.DeleteTaskRequest(resource_meta=meta, task_category=ARMADA), timeout=30)


def test_c0_passes_armadas_refusal_back_to_the_backend(c0):
    request = connector_pb2.CreateTaskRequest(
        template=python_template("pass", ArmadaConfig(architecture="arm64", queue="missing")),
        output_prefix="s3://bucket/raw",
    )
    with pytest.raises(grpc.RpcError) as info:
        c0.CreateTask(request, timeout=30)
    assert "missing" in info.value.details()
