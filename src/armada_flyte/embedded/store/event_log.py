"""Job-set event streams: one append-only stream per (queue, job set), as Armada keeps them.

Armada stores each published event sequence as one Redis stream entry (`ms-seq`) and numbers
the events inside it, so a message id reads `ms:seq:subseq:last` (last is 1 on the sequence's
final event; `internal/server/event/sequence/sequence.go`). A reader resumes after any id it
was given. Nothing here blocks: a watcher subscribes and is called back when its stream grows,
so thousands of watches cost no threads.
"""

from __future__ import annotations

import bisect
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from armada_flyte.embedded.model.refusals import Refusal
from armada_flyte.embedded.store.persistence import EphemeralStore, StateStore

if TYPE_CHECKING:
    from armada_flyte.embedded.store.jobs import Job

Key = tuple[int, int, int]
"""(ms, seq, subseq): an event's place in its stream; ids compare by it."""


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One event: its kind (the field name in Armada's `EventMessage` oneof), job, time and extra fields."""

    kind: str
    job: Job
    created: float
    fields: Mapping[str, Any] = field(default_factory=dict)


class InvalidMessageId(Refusal):
    """Armada answers an id it can't parse with a plain error, which gRPC sends as UNKNOWN (event/event.go)."""

    def __init__(self, queue: str, job_set: str):
        super().__init__(
            "Could not convert legacy message id over to new message id for request for "
            f"queue {queue}, jobset {job_set}: not a valid redis identifier"
        )


def message_id(key: Key, last: bool) -> str:
    return f"{key[0]}:{key[1]}:{key[2]}:{int(last)}"


def parse_message_id(text: str, queue: str, job_set: str) -> tuple[Key, bool]:
    """The position an id names and whether it was its sequence's last; "" is the start of the stream."""
    if not text:
        return (0, 0, -1), True
    parts = text.split(":")
    try:
        if len(parts) == 4 and parts[3] in ("0", "1", "true", "false"):
            return (int(parts[0]), int(parts[1]), int(parts[2])), parts[3] in ("1", "true")
        ms, seq = text.split("-")  # a legacy Redis id, as Armada still accepts
        return (int(ms), int(seq), 0), True
    except ValueError:
        raise InvalidMessageId(queue, job_set) from None


class _Stream:
    def __init__(self) -> None:
        self.keys: list[Key] = []
        self.entries: list[tuple[str, EventRecord]] = []
        self.watchers: set[Callable[[], None]] = set()

    def next_entry(self, now_ms: int) -> tuple[int, int]:
        """A new Redis-style entry id: time in ms, then a counter within that ms, never going back."""
        if not self.keys:
            return now_ms, 0
        last_ms, last_seq, _ = self.keys[-1]
        return (last_ms, last_seq + 1) if now_ms <= last_ms else (now_ms, 0)


class EventLog:
    def __init__(self, store: StateStore | None = None) -> None:
        self._lock = threading.Lock()
        self._streams: dict[tuple[str, str], _Stream] = {}
        self._closed = False
        self._store = store if store is not None else EphemeralStore()

    def restore(self, queue: str, job_set: str, entries: Iterable[tuple[Key, bool, EventRecord]]) -> None:
        """Saved events, in stream order, before anything new is appended: ids go on from the last one."""
        with self._lock:
            stream = self._streams.setdefault((queue, job_set), _Stream())
            for position, last, record in entries:
                stream.keys.append(position)
                stream.entries.append((message_id(position, last), record))

    def append(self, kind: str, job: Job, **fields: Any) -> None:
        self.append_sequence([(kind, job, fields)])

    def append_sequence(self, events: Iterable[tuple[str, Job, Mapping[str, Any]]]) -> None:
        """Events published together (one Armada event sequence, of one job set): one entry, numbered within."""
        now = time.time()
        records = [EventRecord(kind, job, now, dict(fields)) for kind, job, fields in events]
        if not records:
            return
        key = (records[0].job.queue, records[0].job.job_set)
        with self._lock:
            stream = self._streams.setdefault(key, _Stream())
            ms, seq = stream.next_entry(int(now * 1000))
            saved = []
            for subseq, record in enumerate(records):
                position, last = (ms, seq, subseq), subseq == len(records) - 1
                stream.keys.append(position)
                stream.entries.append((message_id(position, last), record))
                saved.append((position, last, record))
            self._store.events_appended(saved)
            watchers = list(stream.watchers)
        for wake in watchers:
            wake()

    def exists(self, queue: str, job_set: str) -> bool:
        with self._lock:
            stream = self._streams.get((queue, job_set))
            return bool(stream and stream.keys)

    def read(self, queue: str, job_set: str, after: str = "", limit: int = 500) -> list[tuple[str, EventRecord]]:
        """Up to `limit` events after the one `after` names (all from the start for ""), each with its id."""
        (ms, seq, subseq), last = parse_message_id(after, queue, job_set)
        start = (ms, seq, 2**62) if last else (ms, seq, subseq)  # after `last`, the whole entry is done
        with self._lock:
            stream = self._streams.get((queue, job_set))
            if stream is None:
                return []
            index = bisect.bisect_right(stream.keys, start)
            return stream.entries[index : index + limit]

    def watch(self, queue: str, job_set: str, wake: Callable[[], None]) -> Callable[[], None]:
        """Call `wake` (from any thread) whenever the stream grows or the log closes; returns the unsubscribe."""
        with self._lock:
            stream = self._streams.setdefault((queue, job_set), _Stream())
            stream.watchers.add(wake)
            closed = self._closed
        if closed:
            wake()

        def unsubscribe() -> None:
            with self._lock:
                stream.watchers.discard(wake)

        return unsubscribe

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """End every watch: watchers are woken, see `closed` and finish their streams."""
        with self._lock:
            self._closed = True
            watchers = [w for stream in self._streams.values() for w in stream.watchers]
        for wake in watchers:
            wake()
