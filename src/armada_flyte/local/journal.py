"""A record of the Armada jobs this process ran, for the end-of-run table local runs print."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Optional, TextIO


@dataclass(frozen=True)
class JobRecord:
    task: str
    architecture: str
    source: str
    node_group: str
    node: str
    state: str
    seconds: float
    job_id: str


_records: list[JobRecord] = []
_lock = threading.Lock()


def record(entry: JobRecord) -> None:
    with _lock:
        _records.append(entry)


def jobs() -> list[JobRecord]:
    with _lock:
        return list(_records)


def clear() -> None:
    with _lock:
        _records.clear()


def format_jobs_table(entries: Optional[list[JobRecord]] = None) -> str:
    """The jobs as an aligned text table: task, requested architecture and its source, placement, state, time."""
    entries = jobs() if entries is None else entries
    header = ("task", "architecture", "from", "node group", "node", "state", "seconds")
    rows = [
        (e.task, e.architecture or "-", e.source, e.node_group or "-", e.node or "-", e.state, f"{e.seconds:.2f}")
        for e in entries
    ]
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def print_jobs_table(out: Optional[TextIO] = None) -> None:
    print(format_jobs_table(), file=out)
