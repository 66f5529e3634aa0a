"""Flyte's `c0` connector service of the tests' own, on a free port of 127.0.0.1."""

from __future__ import annotations

import contextlib
import os
import pathlib
import socket
import subprocess
import sys
from typing import Iterator, Mapping

import grpc
from flyteidl2.connector import connector_pb2, service_pb2_grpc

ARMADA_TASKS = connector_pb2.TaskCategory(name="armada", version=0)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_c0(env: Mapping[str, str], log_path: pathlib.Path) -> Iterator[service_pb2_grpc.AsyncConnectorServiceStub]:
    """Start `c0` (it loads the `armada` connector from its entry point) with `env` added to ours."""
    port = free_port()
    c0 = pathlib.Path(sys.executable).parent / "c0"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [str(c0), "--port", str(port), "--prometheus_port", str(free_port())],
            env={**os.environ, **env},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        try:
            grpc.channel_ready_future(channel).result(timeout=60)
            yield service_pb2_grpc.AsyncConnectorServiceStub(channel)
        finally:
            channel.close()
            process.terminate()
            process.wait(timeout=30)
