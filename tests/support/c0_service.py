"""Flyte's `c0` connector service of the tests' own, on a free port of 127.0.0.1."""

from __future__ import annotations

import contextlib
import os
import pathlib
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Collection, Iterator, Mapping, Optional

import grpc
from flyteidl2.connector import connector_pb2, service_pb2_grpc
from flyteidl2.core.execution_pb2 import TaskExecution

from support.waiting import wait_until

ARMADA_TASKS = connector_pb2.TaskCategory(name="armada", version=0)
TERMINAL = frozenset(
    {TaskExecution.SUCCEEDED, TaskExecution.FAILED, TaskExecution.RETRYABLE_FAILED, TaskExecution.ABORTED}
)
"""The phases after which Flyte's backend stops asking about a task."""
START_SECONDS = 120.0
"""How long c0 may take to answer after it starts; generous, for a loaded machine (60 s was too short at load ~120)."""
START_ATTEMPTS = 3
"""Starts of c0 when a port it was given is taken before it binds it (see `c0_process`)."""


def c0_env(armada_url: str, blob_endpoint: str, **settings: str) -> dict[str, str]:
    """c0's environment for an Armada and the local blob store, its keys reaching pods by Secret as in
    production; `settings` add ARMADA_FLYTE_<NAME> values."""
    from armada_flyte.local.stack import ACCESS_KEY, BLOB_CREDENTIALS_SECRET, SECRET_KEY

    return {
        "ARMADA_URL": armada_url,
        "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded",
        "FLYTE_BLOB_ENDPOINT": blob_endpoint,
        "FLYTE_BLOB_ACCESS_KEY": ACCESS_KEY,
        "FLYTE_BLOB_SECRET_KEY": SECRET_KEY,
        "ARMADA_FLYTE_BLOB_CREDENTIALS_SECRET": BLOB_CREDENTIALS_SECRET,
        **{f"ARMADA_FLYTE_{name.upper()}": value for name, value in settings.items()},
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_c0(env: Mapping[str, str], log_path: pathlib.Path) -> Iterator[service_pb2_grpc.AsyncConnectorServiceStub]:
    """Start `c0` (it loads the `armada` connector from its entry point) with `env` added to ours."""
    with c0_process(env, log_path) as c0:
        yield c0.stub


@dataclass
class C0Process:
    """A running `c0` and the stub that calls it."""

    process: subprocess.Popen
    stub: service_pb2_grpc.AsyncConnectorServiceStub

    def kill(self) -> None:
        """SIGKILL, as a crash or an evicted pod ends it: nothing of its memory survives."""
        self.process.kill()
        self.process.wait(timeout=30)


@contextlib.contextmanager
def c0_process(env: Mapping[str, str], log_path: pathlib.Path) -> Iterator[C0Process]:
    """`running_c0`, with the process too (to kill it); `log_path` is appended to, so a restart keeps one log.

    Its two ports are picked free, then bound by c0: in between, another process may take one (a busy
    machine's outgoing connections draw from the same range), and c0 exits "Address already in use".
    It is then started again on new ports, up to START_ATTEMPTS times."""
    for attempt in range(1, START_ATTEMPTS + 1):
        port = free_port()
        process, channel, log_start = _start_c0(env, log_path, port)
        try:
            if _answers(channel, process, log_path, log_start, last_attempt=attempt == START_ATTEMPTS):
                yield C0Process(process, service_pb2_grpc.AsyncConnectorServiceStub(channel))
                return
        finally:
            channel.close()
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=30)


def _start_c0(env: Mapping[str, str], log_path: pathlib.Path, port: int) -> tuple[subprocess.Popen, grpc.Channel, int]:
    c0 = pathlib.Path(sys.executable).parent / "c0"
    with log_path.open("a") as log:
        log_start = log.tell()
        process = subprocess.Popen(
            [str(c0), "--port", str(port), "--prometheus_port", str(free_port())],
            env={**os.environ, **env},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    return process, grpc.insecure_channel(f"127.0.0.1:{port}"), log_start


def _answers(
    channel: grpc.Channel, process: subprocess.Popen, log_path: pathlib.Path, log_start: int, last_attempt: bool
) -> bool:
    """True once c0 accepts calls; False when it exited as its port was taken (and another try is left)."""
    try:
        _wait_until_it_answers(channel, process, log_path)
        return True
    except AssertionError:
        with log_path.open("rb") as log:
            log.seek(log_start)
            port_taken = b"Address already in use" in log.read()
        if process.poll() is not None and port_taken and not last_attempt:
            return False
        raise


def _wait_until_it_answers(channel: grpc.Channel, process: subprocess.Popen, log_path: pathlib.Path) -> None:
    """Return once c0 accepts calls; fail with the end of its log if it exits first or takes over START_SECONDS."""
    ready = grpc.channel_ready_future(channel)
    try:
        wait_until(lambda: ready.done() or process.poll() is not None, timeout=START_SECONDS, what="c0 to answer")
    except AssertionError as late:
        ready.cancel()
        raise AssertionError(f"{late}; the end of {log_path}:\n{_tail(log_path)}") from None
    if not ready.done():
        ready.cancel()
        raise AssertionError(f"c0 exited ({process.returncode}); the end of {log_path}:\n{_tail(log_path)}")


def _tail(log_path: pathlib.Path, lines: int = 40) -> str:
    return "\n".join(log_path.read_text(errors="replace").splitlines()[-lines:])


def get_round(
    c0: service_pb2_grpc.AsyncConnectorServiceStub, metas: list[bytes], seconds: float, timeout: float = 120
) -> list[connector_pb2.GetTaskResponse]:
    """One GetTask per task, spread evenly over `seconds`, as a Flyte backend's resync sends them."""
    spread, started, calls = seconds / len(metas), time.monotonic(), []
    for i, meta in enumerate(metas):
        request = connector_pb2.GetTaskRequest(resource_meta=meta, task_category=ARMADA_TASKS)
        calls.append(c0.GetTask.future(request, timeout=timeout))
        time.sleep(max(0.0, started + i * spread - time.monotonic()))
    return [call.result() for call in calls]


def poll_until_done(
    c0: service_pb2_grpc.AsyncConnectorServiceStub,
    meta: bytes,
    phases: Collection[int] = TERMINAL,
    timeout: float = 120.0,
    *,
    on_poll: Optional[Callable[[Any], None]] = None,
    explain: Optional[Callable[[], str]] = None,
    interval: float = 0.1,
) -> Any:
    """GetTask through c0, as Flyte's backend does, until the task's phase is one of `phases`; the
    resource then. `on_poll` sees every answer. Past `timeout` seconds it fails with the last phase and
    message (and what `explain()` adds, e.g. the servers' logs)."""
    deadline = time.monotonic() + timeout
    request = connector_pb2.GetTaskRequest(resource_meta=meta, task_category=ARMADA_TASKS)
    while True:
        resource = c0.GetTask(request, timeout=30).resource
        if on_poll is not None:
            on_poll(resource)
        if resource.phase in phases:
            return resource
        if time.monotonic() >= deadline:
            said = f"still {TaskExecution.Phase.Name(resource.phase)} after {timeout} s: {resource.message}"
            raise AssertionError(said + (f"\n{explain()}" if explain is not None else ""))
        time.sleep(interval)
