"""The Armada jobs this process's local runs submitted and have not seen end.

Ctrl-C in a sync `flyte.run(...)` or `flyte run` raises KeyboardInterrupt in the main thread,
and the process exits without cancelling the run's coroutines, so the wait that would cancel
the job never ends. Every job still here when the interpreter exits is cancelled then.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import threading
from typing import Any

log = logging.getLogger(__name__)

_jobs: dict[str, tuple[Any, Any]] = {}
"""job id -> (connector, metadata)."""
_lock = threading.Lock()
_registered = False


def started(connector: Any, meta: Any) -> None:
    """Remember a submitted job until `ended` (the first one registers the exit hook)."""
    global _registered
    with _lock:
        _jobs[meta.job_id] = (connector, meta)
        if not _registered:
            atexit.register(cancel_all)
            _registered = True


def ended(meta: Any) -> None:
    with _lock:
        _jobs.pop(meta.job_id, None)


def cancel_all() -> None:
    """Cancel every job still in flight, on a loop of its own (the run's loop may be gone)."""
    with _lock:
        pending = list(_jobs.values())
        _jobs.clear()
    if not pending:
        return

    async def cancel() -> None:
        # all at once: deletes of one job set share a CancelJobs call
        deletes = (connector.delete(meta) for connector, meta in pending)
        results = await asyncio.gather(*deletes, return_exceptions=True)
        for (_, meta), result in zip(pending, results):
            if isinstance(result, BaseException):  # the exit must go on; say what is left running
                log.warning("could not cancel Armada job %s of the interrupted run: %s", meta.job_id, result)
            else:
                log.warning("cancelled Armada job %s: its run was interrupted", meta.job_id)

    asyncio.run(cancel())
