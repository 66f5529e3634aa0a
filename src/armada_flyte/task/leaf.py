"""Inside its Armada pod a task is a leaf: a call to another task fails at once, saying why.

In the pod, a0's controller would hand the nested call to a Flyte backend the pod can't use, and
the call would wait forever. While the task's function runs, the controller is swapped for one
that refuses task calls and passes everything else (traces, stop) to a0's own.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from flyte.errors import RuntimeUserError

from armada_flyte.task import flyte_internals

ERROR_CODE = "ArmadaTaskIsALeaf"


class LeafController:
    """a0's controller, less the ability to run other tasks."""

    def __init__(self, inner: Any, task_name: str):
        self._inner = inner
        self._task_name = task_name

    def _refuse(self, called: Any) -> RuntimeUserError:
        name = getattr(called, "name", None) or str(called)
        return RuntimeUserError(
            ERROR_CODE,
            f"task {self._task_name} runs as an Armada job, and Armada tasks are leaves: it can't call task "
            f"{name}. Call {name} from the task that calls {self._task_name} (a driver task that runs on "
            f"Flyte), or run {self._task_name} as a plain Flyte task (without ArmadaConfig).",
        )

    async def submit(self, task: Any, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse(task)

    def submit_sync(self, task: Any, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse(task)

    async def submit_task_ref(self, task: Any, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse(task)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@contextlib.contextmanager
def as_leaf(task_name: str) -> Iterator[None]:
    """Run the block with task calls refused (see the module's docstring)."""
    state = flyte_internals.controller_state
    with state.lock:
        inner = state.controller
        state.controller = LeafController(inner, task_name)
    try:
        yield
    finally:
        with state.lock:
            state.controller = inner
