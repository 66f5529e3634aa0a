"""Start Flyte's `c0` connector service the way the tests do (tests/support/c0_service.py), for benchmarks."""

from __future__ import annotations

import contextlib
import os
import pathlib
import socket
import subprocess
import sys
from typing import Iterator, Mapping

import grpc

HERE = pathlib.Path(__file__).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_c0(env: Mapping[str, str], log_path: pathlib.Path) -> Iterator[tuple[grpc.Channel, int]]:
    """c0 with the `armada` connector (entry point) and the no-op one; yields a channel to it and its pid."""
    port = free_port()
    c0 = pathlib.Path(sys.executable).parent / "c0"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [str(c0), "--port", str(port), "--prometheus_port", str(free_port()), "--modules", "noop_connector"],
            env={**os.environ, **env},
            cwd=HERE,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        channel = grpc.insecure_channel(
            f"127.0.0.1:{port}", options=[("grpc.max_receive_message_length", 64 * 1024 * 1024)]
        )
        try:
            try:
                grpc.channel_ready_future(channel).result(timeout=60)
            except grpc.FutureTimeoutError:
                raise RuntimeError(
                    f"c0 did not answer within 60 s (exit code {process.poll()}); see {log_path}"
                ) from None
            yield channel, process.pid
        finally:
            channel.close()
            process.terminate()
            process.wait(timeout=30)


def rss_mb(pid: int) -> float:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")
