"""Where the server keeps its state: nowhere (ephemeral), or an SQLite file under a state folder.

The control plane keeps working from memory; a store only hears of changes (queues saved and
removed, events appended, a job changed) and writes them behind, on one writer thread, in one
transaction per batch, so submits and status reads never wait for the disk. What a `kill -9`
can lose is the last batch not yet written, a few milliseconds' worth. At start the store
gives back everything saved, and ended jobs past Armada's event retention are dropped with
their events and pod logs.
"""

from __future__ import annotations

import fcntl
import logging
import os
import pathlib
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Optional, Protocol

from armada_client.armada import submit_pb2

from armada_flyte.armada_names import JobState
from armada_flyte.embedded.store.rows import (
    EventFieldsEncoder,
    EventRow,
    JobRow,
    item_bytes,
    job_row,
    log_data,
    log_lines,
)
from armada_flyte.errors import InvalidConfig
from armada_flyte.pod_runner.pod_log import LogLine

if TYPE_CHECKING:
    from armada_flyte.embedded.store.jobs import Job

EventEntry = tuple[tuple[int, int, int], bool, Any]
"""An appended event: its place (ms, seq, subseq), whether it ends its sequence, and its `EventRecord`
(typed loosely: the event log imports this module)."""

log = logging.getLogger(__name__)

RETENTION_SECONDS = 336 * 3600
"""How long a job set's events are kept after it ended: Armada's event ingester's `retentionDuration`
(config/eventingester/config.yaml)."""
_GATHER_SECONDS = 0.02
"""How long the writer lets changes gather before a batch: a job changed twice in that time is written once."""
_TERMINAL = tuple(int(s) for s in JobState if s.terminal)
_SCHEMA = """
-- events: no index, so appends stay cheap; a stream's events are appended in order, so rowid order is stream order
CREATE TABLE IF NOT EXISTS queues (name TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, seq INTEGER NOT NULL, queue TEXT NOT NULL, job_set TEXT NOT NULL,
    state INTEGER NOT NULL, last_transition REAL NOT NULL, item BLOB NOT NULL, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    queue TEXT NOT NULL, job_set TEXT NOT NULL, ms INTEGER NOT NULL, seq INTEGER NOT NULL,
    subseq INTEGER NOT NULL, last INTEGER NOT NULL, kind TEXT NOT NULL, job_id TEXT NOT NULL,
    created REAL NOT NULL, fields BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS logs (run_id TEXT PRIMARY KEY, job_id TEXT NOT NULL, data BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS logs_by_job ON logs (job_id);
"""


def default_state_dir() -> pathlib.Path:
    """`$XDG_STATE_HOME/armada-flyte/dev`, else `~/.local/state/armada-flyte/dev`."""
    base = os.environ.get("XDG_STATE_HOME") or str(pathlib.Path.home() / ".local" / "state")
    return pathlib.Path(base) / "armada-flyte" / "dev"


@dataclass
class SavedState:
    queues: list[submit_pb2.Queue] = field(default_factory=list)
    jobs: list[JobRow] = field(default_factory=list)
    events: list[EventRow] = field(default_factory=list)
    """In the order they were appended (each stream's in message-id order)."""


class StateStore(Protocol):
    """What the control plane tells its store, and what the store gives back at start."""

    def load(self) -> SavedState: ...

    def attach(self, lock: threading.RLock) -> None:
        """The control plane's lock, held while a changed job is read."""

    def queue_saved(self, queue: submit_pb2.Queue) -> None: ...

    def queue_removed(self, name: str) -> None: ...

    def events_appended(self, entries: list[EventEntry]) -> None:
        """A new event sequence; the jobs it names changed too."""

    def job_changed(self, job: Job) -> None: ...

    def read_log(self, run_id: str) -> list[LogLine]: ...

    def close(self) -> None:
        """Write what is pending and let go of the state."""


class EphemeralStore:
    """Keeps nothing: a restarted server starts empty (tests, the local stack, `--ephemeral`)."""

    def load(self) -> SavedState:
        return SavedState()

    def attach(self, lock: threading.RLock) -> None:
        pass

    def queue_saved(self, queue: submit_pb2.Queue) -> None:
        pass

    def queue_removed(self, name: str) -> None:
        pass

    def events_appended(self, entries: list[EventEntry]) -> None:
        pass

    def job_changed(self, job: Job) -> None:
        pass

    def read_log(self, run_id: str) -> list[LogLine]:
        return []

    def close(self) -> None:
        pass


class StateDirInUse(InvalidConfig):
    def __init__(self, folder: pathlib.Path):
        super().__init__(
            "state_dir",
            str(folder),
            "another armada-flyte dev server uses this state folder; stop it, or pass another --state-dir "
            "(or --ephemeral)",
        )


class SqliteStore:
    """The state in `<folder>/state.sqlite3`, written behind by one thread; the folder is locked while open."""

    def __init__(self, folder: str | pathlib.Path, retention_seconds: float = RETENTION_SECONDS):
        self.folder = pathlib.Path(folder).expanduser()
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.folder.stat().st_uid == os.geteuid():
            self.folder.chmod(0o700)  # jobs' specs and logs: the server's user's only (pods run as other uids)
        self._lock_file = open(self.folder / "lock", "w")
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_file.close()
            raise StateDirInUse(self.folder) from None
        self.path = self.folder / "state.sqlite3"
        self._retention = retention_seconds
        self._db = _connect(self.path)
        self._db.executescript(_SCHEMA)
        self._plane_lock: threading.RLock = threading.RLock()
        self._pending = threading.Lock()
        self._queue_ops: list[tuple[str, Optional[bytes]]] = []
        self._events: list[EventEntry] = []
        self._dirty: dict[str, Job] = {}
        self._items: dict[str, bytes] = {}
        """Request items not yet written (a job's item is written once, with its first row)."""
        self._written: set[str] = set()
        self._logged: set[str] = set()
        self._encoder = EventFieldsEncoder()
        self._wake = threading.Event()
        self._closing = False
        self._thread = threading.Thread(target=self._write_forever, name="armada-state-writer", daemon=True)
        self._reader = threading.local()

    # What the control plane calls

    def load(self) -> SavedState:
        self._expire()
        state = SavedState()
        for (data,) in self._db.execute("SELECT data FROM queues ORDER BY rowid"):
            state.queues.append(submit_pb2.Queue.FromString(data))
        state.jobs = [JobRow(*row) for row in self._db.execute("SELECT * FROM jobs ORDER BY seq")]
        self._written = {row.id for row in state.jobs}
        self._logged = {run_id for (run_id,) in self._db.execute("SELECT run_id FROM logs")}
        state.events = [
            EventRow(q, js, ms, seq, sub, bool(last), kind, job_id, created, fields)
            for q, js, ms, seq, sub, last, kind, job_id, created, fields in self._db.execute(
                "SELECT * FROM events ORDER BY rowid"
            )
        ]
        self._thread.start()
        return state

    def attach(self, lock: threading.RLock) -> None:
        self._plane_lock = lock

    def queue_saved(self, queue: submit_pb2.Queue) -> None:
        self._queue(queue.name, queue.SerializeToString())

    def queue_removed(self, name: str) -> None:
        self._queue(name, None)

    def events_appended(self, entries: list[EventEntry]) -> None:
        with self._pending:
            self._events.extend(entries)
            for _, _, record in entries:
                self._dirty[record.job.id] = record.job
        self._wake.set()

    def job_changed(self, job: Job) -> None:
        with self._pending:
            self._dirty[job.id] = job
        self._wake.set()

    def read_log(self, run_id: str) -> list[LogLine]:
        """A saved pod log (on a connection of the calling thread; the writer's is its own)."""
        db = getattr(self._reader, "db", None)
        if db is None:
            db = self._reader.db = _connect(self.path)
        row = db.execute("SELECT data FROM logs WHERE run_id = ?", (run_id,)).fetchone()
        return log_lines(row[0] if row else None)

    def close(self) -> None:
        self._closing = True
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()
        self._db.close()
        self._lock_file.close()

    # The writer

    def _queue(self, name: str, data: Optional[bytes]) -> None:
        with self._pending:
            self._queue_ops.append((name, data))
        self._wake.set()

    def _write_forever(self) -> None:
        while True:
            self._wake.wait()
            if not self._closing:
                time.sleep(_GATHER_SECONDS)
            self._wake.clear()
            try:
                self._write_batch()
            except Exception:  # a failed batch must not stop the writer; the next change is written again
                log.exception("writing the embedded server's state failed")
            if self._closing:
                self._write_batch()
                return

    def _write_batch(self) -> None:
        with self._plane_lock:  # events and job rows of one moment, so a batch is consistent
            with self._pending:
                queue_ops, self._queue_ops = self._queue_ops, []
                events, self._events = self._events, []
                dirty, self._dirty = self._dirty, {}
            jobs = [job_row(job, self._item(job)) for job in dirty.values()]
            logs = [(run.id, job.id, run.log.lines()) for job in dirty.values() for run in self._finished_runs(job)]
        if not (queue_ops or events or jobs):
            return
        encode = self._encoder.encode
        event_rows = [
            (r.job.queue, r.job.job_set, *key, int(last), r.kind, r.job.id, r.created, encode(r.kind, r.fields))
            for key, last, r in events
        ]
        with self._db:
            for name, data in queue_ops:
                if data is None:
                    self._db.execute("DELETE FROM queues WHERE name = ?", (name,))
                else:
                    self._db.execute(
                        "INSERT INTO queues (name, data) VALUES (?, ?) "
                        "ON CONFLICT (name) DO UPDATE SET data = excluded.data",
                        (name, data),
                    )
            self._db.executemany(
                "INSERT INTO jobs VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                "state = excluded.state, last_transition = excluded.last_transition, record = excluded.record",
                [(r.id, r.seq, r.queue, r.job_set, r.state, r.last_transition, r.item, r.record) for r in jobs],
            )
            self._db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", event_rows)
            self._db.executemany(
                "INSERT OR REPLACE INTO logs VALUES (?, ?, ?)",
                [(run_id, job_id, log_data(lines)) for run_id, job_id, lines in logs],
            )
        self._written.update(r.id for r in jobs)

    def _item(self, job: Job) -> bytes:
        return b"" if job.id in self._written else item_bytes(job)

    def _finished_runs(self, job: Job) -> Iterable:
        """Runs that ended and whose log isn't saved yet (a log is saved once, when its run has ended)."""
        for run in job.runs:
            if run.finished_at is not None and run.id not in self._logged:
                self._logged.add(run.id)
                yield run

    def _expire(self) -> None:
        """Drop ended jobs (with their events and pod logs) whose last change is older than the retention."""
        marks = ",".join("?" * len(_TERMINAL))
        expired = f"SELECT id FROM jobs WHERE state IN ({marks}) AND last_transition < ?"
        arguments = (*_TERMINAL, time.time() - self._retention)
        with self._db:
            self._db.execute(f"DELETE FROM events WHERE job_id IN ({expired})", arguments)
            self._db.execute(f"DELETE FROM logs WHERE job_id IN ({expired})", arguments)
            dropped = self._db.execute(f"DELETE FROM jobs WHERE id IN ({expired})", arguments).rowcount
        if dropped:
            hours = self._retention // 3600
            log.info("dropped %d jobs that ended over %d hours ago, with their events and logs", dropped, hours)


def _connect(path: pathlib.Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, check_same_thread=False)  # `with db:` makes each batch one transaction
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    return db


def saved_job_states(folder: str | pathlib.Path) -> dict[str, JobState]:
    """Each saved job's state as written so far (read-only; for tools and tests beside a running server)."""
    db = sqlite3.connect(f"file:{pathlib.Path(folder) / 'state.sqlite3'}?mode=ro", uri=True)
    try:
        return {job_id: JobState(state) for job_id, state in db.execute("SELECT id, state FROM jobs")}
    finally:
        db.close()


def make_store(state_dir: Optional[str | pathlib.Path]) -> StateStore:
    """An SQLite store under `state_dir`, or an ephemeral one for None."""
    return SqliteStore(state_dir) if state_dir is not None else EphemeralStore()
