"""Start Flyte's `c0` connector service the way the tests do (tests/support/c0_service.py), for benchmarks."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import socket
import subprocess
import sys
import urllib.request
from typing import Iterator, Mapping

import grpc

HERE = pathlib.Path(__file__).parent
C0_DEFAULT_WORKERS = 10
"""c0's `--worker` default: the thread pool of its grpc.aio server (its handlers are coroutines)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclasses.dataclass(frozen=True)
class C0:
    """One running c0 process: where it serves gRPC and its Prometheus metrics."""

    address: str
    pid: int
    metrics_port: int

    def answered(self, operation: str, task_type: str = "armada") -> int:
        """Calls of `operation` (create, get, delete) c0's handler answered, from its own metrics: counted
        where they arrive. Calls gRPC refused before the handler ran are not among them."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10) as page:
            text = page.read().decode()
        total = 0.0
        for line in text.splitlines():
            if line.startswith("flyte_connector_requests_") and "_total{" in line:
                labels, value = line.rsplit(" ", 1)
                if f'operation="{operation}"' in labels and f'task_type="{task_type}"' in labels:
                    total += float(value)
        return int(total)


@contextlib.contextmanager
def started_c0(env: Mapping[str, str], log_path: pathlib.Path, workers: int = C0_DEFAULT_WORKERS) -> Iterator[C0]:
    """c0 with the `armada` connector (entry point) and the no-op one, serving once this yields; stopped after."""
    port, metrics_port = free_port(), free_port()
    c0 = pathlib.Path(sys.executable).parent / "c0"
    command = [str(c0), "--port", str(port), "--prometheus_port", str(metrics_port), "--worker", str(workers)]
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [*command, "--modules", "noop_connector"],
            env={**os.environ, **env},
            cwd=HERE,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                try:
                    grpc.channel_ready_future(channel).result(timeout=60)
                except grpc.FutureTimeoutError:
                    raise RuntimeError(
                        f"c0 did not answer within 60 s (exit code {process.poll()}); see {log_path}"
                    ) from None
            yield C0(f"127.0.0.1:{port}", process.pid, metrics_port)
        finally:
            process.terminate()
            process.wait(timeout=30)


@contextlib.contextmanager
def running_c0(env: Mapping[str, str], log_path: pathlib.Path) -> Iterator[tuple[grpc.Channel, int]]:
    """One c0; yields a channel to it and its pid."""
    with started_c0(env, log_path) as c0:
        channel = grpc.insecure_channel(c0.address, options=[("grpc.max_receive_message_length", 64 * 1024 * 1024)])
        try:
            yield channel, c0.pid
        finally:
            channel.close()


def rss_mb(pid: int) -> float:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")
