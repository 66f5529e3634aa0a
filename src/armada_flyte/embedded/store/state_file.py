"""The state file, `<folder>/state.sqlite3`: its tables and the SQL that reads and writes them.

`persistence.SqliteStore` decides when to write; this module only knows the rows. Each write is one
transaction, so a write that fails (a full disk) leaves the file as it was, to be written again.
"""

from __future__ import annotations

import pathlib
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Optional

from armada_client.armada import submit_pb2

from armada_flyte.armada_names import JobState
from armada_flyte.embedded.store.rows import EventRow, JobRow

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


@dataclass
class SavedState:
    queues: list[submit_pb2.Queue] = field(default_factory=list)
    jobs: list[JobRow] = field(default_factory=list)
    events: list[EventRow] = field(default_factory=list)
    """In the order they were appended (each stream's in message-id order)."""


@dataclass
class Rows:
    """One write: queue upserts (data) and removals (None) in order, job rows, event rows and pod logs."""

    queue_ops: list[tuple[str, Optional[bytes]]]
    jobs: list[JobRow]
    events: list[tuple]
    logs: list[tuple[str, str, bytes]]
    """(run id, job id, compressed log)."""


def connect(path: pathlib.Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, check_same_thread=False)  # `with db:` makes each write one transaction
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    return db


def create_tables(db: sqlite3.Connection) -> None:
    db.executescript(_SCHEMA)


def read_all(db: sqlite3.Connection) -> SavedState:
    state = SavedState()
    for (data,) in db.execute("SELECT data FROM queues ORDER BY rowid"):
        state.queues.append(submit_pb2.Queue.FromString(data))
    state.jobs = [JobRow(*row) for row in db.execute("SELECT * FROM jobs ORDER BY seq")]
    state.events = [
        EventRow(q, js, ms, seq, sub, bool(last), kind, job_id, created, fields)
        for q, js, ms, seq, sub, last, kind, job_id, created, fields in db.execute(
            "SELECT * FROM events ORDER BY rowid"
        )
    ]
    return state


def saved_log_ids(db: sqlite3.Connection) -> set[str]:
    return {run_id for (run_id,) in db.execute("SELECT run_id FROM logs")}


def read_log(db: sqlite3.Connection, run_id: str) -> Optional[bytes]:
    row = db.execute("SELECT data FROM logs WHERE run_id = ?", (run_id,)).fetchone()
    return row[0] if row else None


def write(db: sqlite3.Connection, rows: Rows) -> None:
    """All of `rows` in one transaction, or nothing (an error rolls it back and is raised)."""
    with db:
        for name, data in rows.queue_ops:
            if data is None:
                db.execute("DELETE FROM queues WHERE name = ?", (name,))
            else:
                db.execute(
                    "INSERT INTO queues (name, data) VALUES (?, ?) "
                    "ON CONFLICT (name) DO UPDATE SET data = excluded.data",
                    (name, data),
                )
        db.executemany(
            "INSERT INTO jobs VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
            "state = excluded.state, last_transition = excluded.last_transition, record = excluded.record",
            [(r.id, r.seq, r.queue, r.job_set, r.state, r.last_transition, r.item, r.record) for r in rows.jobs],
        )
        db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows.events)
        db.executemany("INSERT OR REPLACE INTO logs VALUES (?, ?, ?)", rows.logs)


def expire(db: sqlite3.Connection, retention_seconds: float) -> int:
    """Drop ended jobs (with their events and pod logs) whose last change is older than the retention."""
    marks = ",".join("?" * len(_TERMINAL))
    expired = f"SELECT id FROM jobs WHERE state IN ({marks}) AND last_transition < ?"
    arguments = (*_TERMINAL, time.time() - retention_seconds)
    with db:
        db.execute(f"DELETE FROM events WHERE job_id IN ({expired})", arguments)
        db.execute(f"DELETE FROM logs WHERE job_id IN ({expired})", arguments)
        return db.execute(f"DELETE FROM jobs WHERE id IN ({expired})", arguments).rowcount


def saved_job_states(folder: str | pathlib.Path) -> dict[str, JobState]:
    """Each saved job's state as written so far (read-only; for tools and tests beside a running server)."""
    db = sqlite3.connect(f"file:{pathlib.Path(folder) / 'state.sqlite3'}?mode=ro", uri=True)
    try:
        return {job_id: JobState(state) for job_id, state in db.execute("SELECT id, state FROM jobs")}
    finally:
        db.close()
