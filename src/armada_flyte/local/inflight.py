"""The Armada jobs this process's local runs submitted and have not seen end.

Ctrl-C in a sync `flyte.run(...)` or `flyte run` raises KeyboardInterrupt in the main thread,
and the process exits without cancelling the run's coroutines, so the wait that would cancel
the job never ends. Every job still here when the interpreter exits is cancelled then.

A Ctrl-C that ends the process says so in one line, with the jobs it cancelled, instead of a
traceback of where the main thread happened to wait. The run's own wait, still polling in its
thread, may see those jobs end before the interpreter is gone: `exiting()` tells it to say
nothing (else Flyte would log the cancelled job as a task failure after the one line).

A run that ends when one task fails leaves its other calls running (Flyte does not cancel them). When the
local stack stops, `abandon_all` cancels them while the server still answers, and their waits end quietly
(`abandoned`) instead of polling a server that is gone.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import sys
import threading
import time
from typing import Any

from armada_flyte.local import console

log = logging.getLogger(__name__)

_jobs: dict[str, tuple[Any, Any]] = {}
"""job id -> (connector, metadata)."""
_lock = threading.Lock()
_registered = False
_exiting = threading.Event()
_abandoned: set[str] = set()
ABANDON_SETTLE_SECONDS = 10.0


def started(connector: Any, meta: Any) -> None:
    """Remember a submitted job until `ended` (the first one registers the exit hooks)."""
    global _registered
    with _lock:
        _jobs[meta.job_id] = (connector, meta)
        if not _registered:
            atexit.register(_cancel_at_exit)
            sys.excepthook = _interrupt_in_one_line(sys.excepthook)
            _registered = True


def ended(meta: Any) -> None:
    with _lock:
        _jobs.pop(meta.job_id, None)


def exiting() -> bool:
    """True once the process cancels its jobs to end (Ctrl-C, or the interpreter's exit)."""
    return _exiting.is_set()


def abandoned(job_id: str) -> bool:
    """True for a job `abandon_all` cancelled: its wait ends quietly."""
    with _lock:
        return job_id in _abandoned


def abandon_all(settle: float = ABANDON_SETTLE_SECONDS) -> list[str]:
    """Cancel every job still in flight, whose run has ended without it, and wait (at most `settle` seconds) for
    their waits to notice; the ids cancelled. Called before the Armada they run on stops."""
    with _lock:
        pending = list(_jobs.values())
        _abandoned.update(meta.job_id for _, meta in pending)
    cancelled = _cancel(pending)
    if cancelled:
        log.warning(
            "cancelled %s still running after their run ended: %s",
            "Armada job" if len(cancelled) == 1 else f"{len(cancelled)} Armada jobs",
            ", ".join(cancelled),
        )
    deadline = time.monotonic() + settle
    while time.monotonic() < deadline:
        with _lock:
            if not any(meta.job_id in _jobs for _, meta in pending):
                break
        time.sleep(0.05)
    return cancelled


def cancel_all() -> list[str]:
    """Cancel every job still in flight, on a loop of its own (the run's loop may be gone); the ids cancelled.
    Only for the process's end: from here on `exiting()` is true."""
    _exiting.set()
    with _lock:
        pending = list(_jobs.values())
        _jobs.clear()
    return _cancel(pending)


def _cancel(pending: list[tuple[Any, Any]]) -> list[str]:
    if not pending:
        return []
    cancelled: list[str] = []

    async def cancel() -> None:
        # all at once: deletes of one job set share a CancelJobs call
        deletes = (connector.delete(meta) for connector, meta in pending)
        results = await asyncio.gather(*deletes, return_exceptions=True)
        for (_, meta), result in zip(pending, results):
            if isinstance(result, BaseException):  # the exit must go on; say what is left running
                log.warning("could not cancel Armada job %s of the interrupted run: %s", meta.job_id, result)
            else:
                cancelled.append(meta.job_id)

    asyncio.run(cancel())
    return cancelled


def _cancel_at_exit() -> None:
    cancelled = cancel_all()
    if len(cancelled) == 1:
        log.warning("cancelled Armada job %s: its run was interrupted or ended without it", cancelled[0])
    elif cancelled:
        log.warning(
            "cancelled %d Armada jobs: their run was interrupted or ended without them: %s",
            len(cancelled),
            ", ".join(cancelled),
        )


def interrupted_message(cancelled: list[str]) -> str:
    if not cancelled:
        return "interrupted (Ctrl-C)"
    if len(cancelled) == 1:
        return f"interrupted (Ctrl-C): cancelled Armada job {cancelled[0]}"
    return f"interrupted (Ctrl-C): cancelled {len(cancelled)} Armada jobs: {', '.join(cancelled)}"


def _interrupt_in_one_line(previous: Any) -> Any:
    """An excepthook that ends a KeyboardInterrupt with one line (after cancelling the run's jobs), and
    leaves every other uncaught exception to `previous`."""

    def hook(kind: type[BaseException], value: BaseException, trace: Any) -> None:
        if not issubclass(kind, KeyboardInterrupt):
            previous(kind, value, trace)
            return
        cancelled = cancel_all()
        console.summary.print_pending(sys.stderr)  # where to see the run's jobs, before the last line
        print(interrupted_message(cancelled), file=sys.stderr, flush=True)

    return hook
