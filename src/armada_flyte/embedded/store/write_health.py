"""Whether the state store's writes go through, so the API refuses new work while they don't.

The writer keeps a batch that failed (a full disk, an I/O error) and tries it again until it goes
through. Meanwhile `WriteHealth` says why and since when: SubmitJobs and the queue calls refuse with
that text, as Armada refuses what it cannot publish, and the health services report it. The first
write that goes through clears it, without a restart.
"""

from __future__ import annotations

import pathlib
import resource
import shutil
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional

import grpc

from armada_flyte.embedded.model.refusals import Refusal

FIX = (
    "free space on that disk (or make the folder writable again); the server accepts new work again by itself "
    "once a write goes through, and writes then what it had accepted"
)


@dataclass(frozen=True)
class WriteFailure:
    folder: pathlib.Path
    cause: str
    since: float

    def problem(self) -> str:
        since = time.strftime("%H:%M:%S", time.localtime(self.since))
        return f"the embedded server cannot write its state folder {self.folder} (since {since}: {self.cause})"

    def explanation(self) -> str:
        return f"{self.problem()}, so it accepts no new jobs or queues: {FIX}"


class StateNotWritable(Refusal):
    """SubmitJobs while the state can't be written: INTERNAL, Armada's answer when Pulsar refuses the
    job's events (`SubmitJobs` in internal/server/submit/submit.go)."""

    code = grpc.StatusCode.INTERNAL


class QueueNotWritable(StateNotWritable):
    """A queue created or updated while the state can't be written: UNAVAILABLE, Armada's answer when its
    queue repository fails (internal/server/queue/queue_service.go)."""

    code = grpc.StatusCode.UNAVAILABLE


Listener = Callable[[Optional[WriteFailure]], None]
"""Told of every change: the failure, or None once writes go through again."""


class WriteHealth:
    """The current write failure of one store (None: writes go through), and who hears of changes."""

    def __init__(self, folder: Optional[pathlib.Path] = None):
        self._folder = folder
        self._failure: Optional[WriteFailure] = None
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()

    @property
    def failure(self) -> Optional[WriteFailure]:
        return self._failure

    def listen(self, listener: Listener) -> None:
        """Call `listener` now with the current state, then at each change (on the writer's thread)."""
        with self._lock:
            self._listeners.append(listener)
            current = self._failure
        listener(current)

    def require_writable(self, refusal: type[StateNotWritable] = StateNotWritable, prefix: str = "") -> None:
        failure = self._failure
        if failure is not None:
            raise refusal(prefix + failure.explanation())

    def failed(self, error: BaseException) -> Optional[WriteFailure]:
        """Record a failed write; the new failure if writes went through until now, else None."""
        if self._failure is not None or self._folder is None:
            return None
        failure = WriteFailure(self._folder, cause_of(error, self._folder), time.time())
        self._tell(failure)
        return failure

    def recovered(self) -> Optional[WriteFailure]:
        """Record a write that went through; the failure it ends, if there was one."""
        ended = self._failure
        if ended is not None:
            self._tell(None)
        return ended

    def _tell(self, failure: Optional[WriteFailure]) -> None:
        with self._lock:
            self._failure = failure
            listeners = list(self._listeners)
        for listener in listeners:
            listener(failure)


def cause_of(error: BaseException, folder: pathlib.Path) -> str:
    """The error as SQLite names it, with what the disk and this process's file-size limit allow."""
    name = getattr(error, "sqlite_errorname", "")
    parts = [f"{error}" + (f" ({name})" if name else "")]
    try:
        parts.append(f"{_size(shutil.disk_usage(folder).free)} free on its disk")
    except OSError:
        pass
    limit, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if limit != resource.RLIM_INFINITY:
        parts.append(f"files of this process are limited to {_size(limit)} (ulimit -f)")
    return "; ".join(parts)


def _size(size: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size // 1024} KiB"
