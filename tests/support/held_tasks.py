"""Many real a0 tasks driven through `c0` as Flyte's backend drives them, held running until a gate
file appears, so a fault can strike while all of them run and each one's right ending is known.

Task `i` returns 2 * i, except every fifth (i % 5 == 4), which raises a ValueError: a recoverable
user error, so RETRYABLE_FAILED with its message. Each task is a run of its own (its own job set),
as a backend's tasks of many runs are. While a part of Armada is away a call to `c0` may fail; the
backend retries such calls (creates and gets alike), and so do these helpers, counting them.
"""

from __future__ import annotations

import asyncio
import pathlib
import sys
import time
import uuid
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable

import grpc
from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

from support.backend_templates import registered_template
from support.c0_service import ARMADA_TASKS, TERMINAL
from support.flyte_metadata import execution_metadata

PROJECT = pathlib.Path(__file__).resolve().parents[1] / "real_armada" / "project"
CALL_SECONDS = 30.0
"""Bound on one call to c0 (it answers at once from its status view, or after a bulk status round)."""


def fails(index: int) -> bool:
    return index % 5 == 4


def right_ending(index: int) -> tuple[int, str]:
    """The phase task `index` must end in, and a part of the message it must end with."""
    if fails(index):
        return TaskExecution.RETRYABLE_FAILED, f"task {index} fails as asked"
    return TaskExecution.SUCCEEDED, "succeeded"


@dataclass
class HeldTasks:
    """`count` held tasks of one test: their create requests, then their metadata once created."""

    gate: pathlib.Path
    requests: list[Any]
    metas: list[bytes] = field(default_factory=list)
    retried_calls: list[str] = field(default_factory=list)
    """The calls to c0 that failed and were made again (what the backend would do), with their error."""

    def open_gate(self) -> None:
        self.gate.write_text("open")


def prepare(stack: Any, count: int, name: str, folder: pathlib.Path) -> HeldTasks:
    """Templates as `flyte deploy` serialises them, each task's inputs in the blob store."""
    sys.path.insert(0, str(PROJECT))
    try:
        import held
        from flyte._internal.runtime import convert, io

        stack.init_flyte(PROJECT)
        gate = folder / "gate"
        name = f"{name}-{uuid.uuid4().hex[:8]}"  # runs of their own: Armada deduplicates a create by its ids

        async def one(index: int) -> Any:
            run = f"{name}-{index}"
            prefix = f"s3://{stack.bucket}/faults/{run}/a0/0"
            template = await registered_template(PROJECT, held.held, prefix)
            inputs = await convert.convert_from_native_to_inputs(
                held.held.native_interface, gate=str(gate), x=index, fail=fails(index)
            )
            await io.upload_inputs(inputs, io.inputs_path(prefix))
            return connector_pb2.CreateTaskRequest(
                template=template,
                output_prefix=prefix,
                task_execution_metadata=execution_metadata(run, "a0", task="held"),
            )

        async def all_of_them() -> list[Any]:
            return list(await asyncio.gather(*(one(index) for index in range(count))))

        return HeldTasks(gate, asyncio.run(all_of_them()))
    finally:
        sys.path.remove(str(PROJECT))


def call_until_answered(tasks: HeldTasks, call: Callable[[], Any], what: str, timeout: float) -> Any:
    """`call()`, made again after each gRPC error (as the backend does) until it answers or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except grpc.RpcError as exc:
            tasks.retried_calls.append(f"{what}: {exc.code().name}: {exc.details()}")
            assert time.monotonic() < deadline, f"{what} failed for {timeout:.0f}s; the last: {tasks.retried_calls[-1]}"
            time.sleep(0.5)


def create_all(c0: Any, tasks: HeldTasks, timeout: float = 300.0) -> None:
    for index, request in enumerate(tasks.requests):
        response = call_until_answered(
            tasks, partial(c0.CreateTask, request, timeout=CALL_SECONDS), f"create {index}", timeout
        )
        tasks.metas.append(response.resource_meta)


def get(c0: Any, meta: bytes) -> Any:
    request = connector_pb2.GetTaskRequest(resource_meta=meta, task_category=ARMADA_TASKS)
    return c0.GetTask(request, timeout=CALL_SECONDS).resource


def phase_name(phase: int) -> str:
    return TaskExecution.Phase.Name(phase)


def wait_until_all(c0: Any, tasks: HeldTasks, phase: int, timeout: float, logs: Callable[[], str]) -> None:
    """Poll every task until each reports `phase` (a task that ends instead fails the test)."""
    deadline = time.monotonic() + timeout
    waiting = set(range(len(tasks.metas)))
    last: dict[int, Any] = {}
    while waiting:
        for index in sorted(waiting):
            resource = call_until_answered(tasks, partial(get, c0, tasks.metas[index]), f"get {index}", timeout)
            last[index] = resource
            assert resource.phase not in TERMINAL, f"task {index} ended early: {resource.message}\n{logs()}"
            if resource.phase == phase:
                waiting.discard(index)
        if waiting and time.monotonic() > deadline:
            late = {i: f"{phase_name(last[i].phase)}: {last[i].message}" for i in sorted(waiting)[:5]}
            raise AssertionError(f"{len(waiting)} tasks not {phase_name(phase)} after {timeout:.0f}s: {late}\n{logs()}")
        time.sleep(0.2)


@dataclass
class Endings:
    """What the backend saw of each task: every phase in order, and the terminal answer it stopped at."""

    phases: dict[int, list[str]] = field(default_factory=dict)
    ended: dict[int, Any] = field(default_factory=dict)

    def messages(self) -> list[str]:
        return [resource.message for resource in self.ended.values()]


def poll_to_the_end(c0: Any, tasks: HeldTasks, timeout: float, logs: Callable[[], str]) -> Endings:
    """Poll every task as the backend's refresh loop does until each reports a terminal phase."""
    endings = Endings({index: [] for index in range(len(tasks.metas))})
    deadline = time.monotonic() + timeout
    while len(endings.ended) < len(tasks.metas):
        for index, meta in enumerate(tasks.metas):
            if index in endings.ended:
                continue
            resource = call_until_answered(tasks, partial(get, c0, meta), f"get {index}", timeout)
            seen = endings.phases[index]
            if not seen or seen[-1] != phase_name(resource.phase):
                seen.append(phase_name(resource.phase))
            if resource.phase in TERMINAL:
                endings.ended[index] = resource
        if len(endings.ended) < len(tasks.metas) and time.monotonic() > deadline:
            left = [i for i in endings.phases if i not in endings.ended]
            raise AssertionError(f"{len(left)} tasks still in flight after {timeout:.0f}s: {left[:10]}\n{logs()}")
        time.sleep(0.2)
    return endings


def wrong_endings(c0: Any, tasks: HeldTasks, endings: Endings) -> list[str]:
    """Every task whose end was not its right one, or whose answer changed when asked again after it ended."""
    wrong = []
    for index, resource in sorted(endings.ended.items()):
        phase, says = right_ending(index)
        if resource.phase != phase or says not in resource.message:
            wrong.append(f"task {index}: {phase_name(resource.phase)}: {resource.message}")
        again = call_until_answered(tasks, partial(get, c0, tasks.metas[index]), f"get {index} again", 60)
        if again.phase != resource.phase:
            wrong.append(f"task {index} ended {phase_name(resource.phase)}, then read {phase_name(again.phase)}")
    return wrong
