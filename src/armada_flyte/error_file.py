"""Read a0's error.pb: the only place a failed user function shows up (a0 exits 0 anyway)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Optional

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TaskError:
    """What a0 recorded: the user's exception type name (`code`), its message, and its kind."""

    code: str
    message: str
    kind: str

    def describe(self) -> str:
        return self.message if self.message.startswith(self.code) else f"{self.code}: {self.message}"


async def read_task_error(outputs_path: str, timeout: float) -> Optional[TaskError]:
    """The error a0 wrote under `outputs_path`, or None (none written, or unreadable within `timeout`).

    The bound matters: in the c0 service Flyte's storage may not reach the pods' blob store, and
    an unbounded read would stall the poll that must report the job terminal.
    """
    if not outputs_path:
        return None
    from flyte import storage
    from flyte._internal.runtime import io

    path = io.error_path(outputs_path)
    try:
        if not await asyncio.wait_for(storage.exists(path), timeout):
            return None
        error = await asyncio.wait_for(io.load_error(path), timeout)
    except asyncio.TimeoutError:
        log.warning("reading %s took over %.1fs; using Armada's state alone", path, timeout)
        return None
    except Exception as exc:  # storage not configured for this store, permissions, ...
        log.warning("could not read %s (%s); using Armada's state alone", path, exc)
        return None
    kind = {1: "user", 2: "system"}.get(int(error.kind), "unknown")
    return TaskError(code=error.code or "Error", message=error.message, kind=kind)
