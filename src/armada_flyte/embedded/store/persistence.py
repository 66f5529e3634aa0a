"""Where the server keeps its state: nowhere (ephemeral), or an SQLite file under a state folder.

The control plane keeps working from memory; a store only hears of changes (queues saved and
removed, events appended, a job changed) and writes them behind, on one writer thread, in one
transaction per batch, so submits and status reads never wait for the disk. A batch that fails
(a full disk, an I/O error) is kept and written again, after a growing wait, until it goes
through; meanwhile the store's `health` says so and the API refuses new jobs and queues. What a
`kill -9` can lose is what is not yet written: on a healthy disk the last batch, a few
milliseconds' worth (docs/embedded-server.md, "State"). At start the store gives back everything
saved, and ended jobs past Armada's event retention are dropped with their events and pod logs.
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
from typing import TYPE_CHECKING, Any, Optional, Protocol

from armada_client.armada import submit_pb2

from armada_flyte.embedded.store import state_file
from armada_flyte.embedded.store.rows import EventFieldsEncoder, JobRow, item_bytes, job_row, log_data, log_lines
from armada_flyte.embedded.store.state_file import SavedState
from armada_flyte.embedded.store.write_health import WriteHealth, cause_of
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
RETRY_SECONDS = (0.1, 2.0)
"""The wait before a failed batch is written again, doubling from the first to at most the second: a freed
disk is written to within 2 s, and a full one costs a failed transaction every 2 s."""


def default_state_dir() -> pathlib.Path:
    """`$XDG_STATE_HOME/armada-flyte/dev`, else `~/.local/state/armada-flyte/dev`."""
    base = os.environ.get("XDG_STATE_HOME") or str(pathlib.Path.home() / ".local" / "state")
    return pathlib.Path(base) / "armada-flyte" / "dev"


class StateStore(Protocol):
    """What the control plane tells its store, and what the store gives back at start."""

    health: WriteHealth
    """Whether writes go through; the API refuses new jobs and queues while they don't."""

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

    def __init__(self) -> None:
        self.health = WriteHealth()

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


class StateDirUnwritable(InvalidConfig):
    def __init__(self, folder: pathlib.Path, error: BaseException):
        super().__init__(
            "state_dir",
            str(folder),
            f"the server cannot open its state there ({cause_of(error, folder)}): free space on that disk or make "
            "the folder writable, or pass another --state-dir (or --ephemeral)",
        )


@dataclass
class _Changes:
    """What was changed and not yet written: queue upserts (data) and removals (None), events, jobs."""

    queue_ops: list[tuple[str, Optional[bytes]]] = field(default_factory=list)
    events: list[EventEntry] = field(default_factory=list)
    jobs: dict[str, Job] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.queue_ops) + len(self.events) + len(self.jobs)

    def put_back(self, failed: _Changes) -> None:
        """A failed batch goes back in front of what changed since, to be written first next time."""
        self.queue_ops[:0] = failed.queue_ops
        self.events[:0] = failed.events
        self.jobs = {**failed.jobs, **self.jobs}


def _private_folder(folder: pathlib.Path) -> None:
    """The state folder, 0700: it holds every job's spec, events and pod logs (tasks print what they print),
    and the pods of a root server run as uids of their own. One of the server's user is narrowed to 0700;
    one of another user's is left as it is, with a warning when others can read it."""
    if not folder.exists():
        folder.parent.mkdir(parents=True, exist_ok=True)
        folder.mkdir(mode=0o700, exist_ok=True)
    if folder.stat().st_uid == os.geteuid():
        folder.chmod(0o700)
    elif folder.stat().st_mode & 0o077:
        log.warning("the state folder %s can be read by other users of this machine: chmod 700 it", folder)


def _private_file(path: pathlib.Path) -> None:
    """`path` exists and only its owner reads it (made 0600, or narrowed to it)."""
    os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
    if path.stat().st_mode & 0o077:
        path.chmod(0o600)


class SqliteStore:
    """The state in `<folder>/state.sqlite3`, written behind by one thread; the folder is locked while open."""

    def __init__(self, folder: str | pathlib.Path, retention_seconds: float = RETENTION_SECONDS):
        self.folder = pathlib.Path(folder).expanduser()
        try:
            _private_folder(self.folder)
            self._lock_file = os.fdopen(os.open(self.folder / "lock", os.O_CREAT | os.O_WRONLY, 0o600), "w")
        except OSError as exc:
            raise StateDirUnwritable(self.folder, exc) from None
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_file.close()
            raise StateDirInUse(self.folder) from None
        self.path = self.folder / "state.sqlite3"
        self._retention = retention_seconds
        try:
            _private_file(self.path)  # SQLite gives its -wal and -shm files the database's mode
            self._db = state_file.connect(self.path)
            state_file.create_tables(self._db)
        except sqlite3.Error as exc:
            self._lock_file.close()
            raise StateDirUnwritable(self.folder, exc) from None
        self.health = WriteHealth(self.folder)
        self._plane_lock: threading.RLock = threading.RLock()
        self._pending = threading.Lock()
        self._changes = _Changes()
        self._written: set[str] = set()
        """Jobs with a row in the file (a job's request item is written once, with its first row)."""
        self._logged: set[str] = set()
        """Runs whose log is in the file (a log is written once, when its run has ended)."""
        self._encoder = EventFieldsEncoder()
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._write_forever, name="armada-state-writer", daemon=True)
        self._reader = threading.local()

    # What the control plane calls

    def load(self) -> SavedState:
        try:
            dropped = state_file.expire(self._db, self._retention)
        except sqlite3.Error as exc:
            log.warning("could not drop the jobs past their retention (%s); they are kept until the next start", exc)
        else:
            if dropped:
                hours = self._retention // 3600
                log.info("dropped %d jobs that ended over %d hours ago, with their events and logs", dropped, hours)
        state = state_file.read_all(self._db)
        self._written = {row.id for row in state.jobs}
        self._logged = state_file.saved_log_ids(self._db)
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
            self._changes.events.extend(entries)
            for _, _, record in entries:
                self._changes.jobs[record.job.id] = record.job
        self._wake.set()

    def job_changed(self, job: Job) -> None:
        with self._pending:
            self._changes.jobs[job.id] = job
        self._wake.set()

    def read_log(self, run_id: str) -> list[LogLine]:
        """A saved pod log (on a connection of the calling thread; the writer's is its own)."""
        db = getattr(self._reader, "db", None)
        if db is None:
            db = self._reader.db = state_file.connect(self.path)
        return log_lines(state_file.read_log(db, run_id))

    def close(self) -> None:
        """Write what is pending (one last try if writes are failing) and let go of the state."""
        self._closed.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()
        self._db.close()
        self._lock_file.close()

    # The writer

    def _queue(self, name: str, data: Optional[bytes]) -> None:
        with self._pending:
            self._changes.queue_ops.append((name, data))
        self._wake.set()

    def _write_forever(self) -> None:
        """A batch whenever something changed; after a failure, the same batch (and what changed since)
        again after a wait that doubles up to `RETRY_SECONDS[1]`. A close cuts any wait short."""
        retry = RETRY_SECONDS[0]
        while True:
            if self.health.failure is None:
                self._wake.wait()
                self._closed.wait(_GATHER_SECONDS)
            else:
                self._closed.wait(retry)
            self._wake.clear()
            closing = self._closed.is_set()
            written = self._write_batch()
            retry = RETRY_SECONDS[0] if written else min(retry * 2, RETRY_SECONDS[1])
            if closing:
                return

    def _write_batch(self) -> bool:
        """Write what changed; a batch that fails goes back to be written again. False if it failed."""
        changes = _Changes()
        try:
            with self._plane_lock:  # events and job rows of one moment, so a batch is consistent
                with self._pending:
                    changes, self._changes = self._changes, _Changes()
                if not changes:
                    return True
                jobs, ended_runs = self._job_rows(changes)
            encode = self._encoder.encode
            events = [
                (r.job.queue, r.job.job_set, *key, int(last), r.kind, r.job.id, r.created, encode(r.kind, r.fields))
                for key, last, r in changes.events
            ]
            logs = [(run_id, job_id, log_data(lines)) for run_id, job_id, lines in ended_runs]
            state_file.write(self._db, state_file.Rows(changes.queue_ops, jobs, events, logs))
        except Exception as exc:  # a full disk, an I/O error, or a fault of ours: nothing is dropped
            return self._keep(changes, exc)
        self._written.update(row.id for row in jobs)
        self._logged.update(run_id for run_id, _, _ in logs)  # saved only now that the transaction is in
        ended = self.health.recovered()
        if ended is not None:
            log.warning(
                "the state folder %s can be written again after %.0f s: %d changes kept meanwhile are written, "
                "and new jobs and queues are accepted again",
                self.folder,
                time.time() - ended.since,
                len(changes),
            )
        return True

    def _job_rows(self, changes: _Changes) -> tuple[list[JobRow], list[tuple[str, str, list[LogLine]]]]:
        """The changed jobs' rows, and the log lines of their runs that ended and whose log isn't in the file."""
        jobs = list(changes.jobs.values())
        rows = [job_row(job, b"" if job.id in self._written else item_bytes(job)) for job in jobs]
        logs = [
            (run.id, job.id, run.log.lines())
            for job in jobs
            for run in job.runs
            if run.finished_at is not None and run.id not in self._logged
        ]
        return rows, logs

    def _keep(self, changes: _Changes, error: Exception) -> bool:
        """Put a batch that failed back in front of what changed since, and say so (once per failure)."""
        with self._pending:
            self._changes.put_back(changes)
        failure = self.health.failed(error)
        if self._closed.is_set():
            log.error(
                "%d changes to the state in %s could not be written before the server stopped, and are lost: %s",
                len(changes),
                self.folder,
                cause_of(error, self.folder),
            )
        elif failure is not None:
            log.error("%s; %d changes are kept in memory until then", failure.explanation(), len(changes))
            if not isinstance(error, (sqlite3.Error, OSError)):
                log.error("the state write failed on an unexpected error", exc_info=error)
        return False


def make_store(state_dir: Optional[str | pathlib.Path]) -> StateStore:
    """An SQLite store under `state_dir`, or an ephemeral one for None."""
    return SqliteStore(state_dir) if state_dir is not None else EphemeralStore()
