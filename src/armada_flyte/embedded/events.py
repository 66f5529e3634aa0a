"""Job-set event streams: one append-only stream per (queue, job set), as Armada keeps them.

A message id is the event's position in its stream, so a reader resumes after the last id it
saw. Readers in watch mode block on their stream's condition instead of polling.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from armada_flyte.embedded.jobs import Job


@dataclass(frozen=True)
class EventRecord:
    """One event: its kind (the field name in Armada's `EventMessage` oneof), job, time and extra fields."""

    kind: str
    job: Job
    created: float
    fields: Mapping[str, Any] = field(default_factory=dict)


class _Stream:
    def __init__(self, lock: threading.Lock):
        self.records: list[EventRecord] = []
        self.changed = threading.Condition(lock)


class EventLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: dict[tuple[str, str], _Stream] = {}
        self._closed = False

    def append(self, kind: str, job: Job, **fields: Any) -> None:
        record = EventRecord(kind, job, time.time(), fields)
        with self._lock:
            stream = self._stream((job.queue, job.job_set))
            stream.records.append(record)
            stream.changed.notify_all()

    def exists(self, queue: str, job_set: str) -> bool:
        with self._lock:
            stream = self._streams.get((queue, job_set))
            return bool(stream and stream.records)

    def read(self, queue: str, job_set: str, after: int = 0) -> list[tuple[int, EventRecord]]:
        """Events after position `after` (0 = from the start), each with its 1-based position."""
        with self._lock:
            stream = self._streams.get((queue, job_set))
            records = stream.records[after:] if stream else []
        return list(enumerate(records, start=after + 1))

    def wait(self, queue: str, job_set: str, after: int, timeout: float) -> None:
        """Block until the stream has events beyond `after`, the log closes, `wake` is called, or timeout."""
        with self._lock:
            stream = self._stream((queue, job_set))
            if len(stream.records) <= after and not self._closed:
                stream.changed.wait(timeout)

    def wake(self, queue: str, job_set: str) -> None:
        with self._lock:
            self._stream((queue, job_set)).changed.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """End every watch: readers see `closed` and finish their streams."""
        with self._lock:
            self._closed = True
            for stream in self._streams.values():
                stream.changed.notify_all()

    def _stream(self, key: tuple[str, str]) -> _Stream:
        stream = self._streams.get(key)
        if stream is None:
            stream = self._streams[key] = _Stream(self._lock)
        return stream
