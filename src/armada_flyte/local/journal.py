"""A record of the Armada jobs this process ran, for the end-of-run table local runs print.

The table says what happened to each task, not what happened to its pod: a0 exits 0 after a task
raised, so Armada's SUCCEEDED can sit beside a failed task. Armada's state is shown too where it
says something else, and every attempt of a task has a row of its own under the task's first.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Optional, TextIO

from armada_flyte.local import console


@dataclass(frozen=True)
class JobRecord:
    task: str
    architecture: str
    source: str
    node_group: str
    node: str
    outcome: str
    """What happened to the task: SUCCEEDED, FAILED <code>, TIMED OUT, CANCELLED (see `outcome_label`)."""
    armada_state: str
    """Armada's state for the job when the task ended (after a cancel: the state Armada then reported)."""
    seconds: float
    job_id: str
    call: str = ""
    """Which call of the task this was (every attempt of one call shares it)."""
    attempt: int = 0


_records: list[JobRecord] = []
_lock = threading.Lock()


def architecture_label(
    architecture: str, any_of: str = "", spilled_from: str | None = None, moved_from: str | None = None
) -> str:
    """The table's architecture: `arm64 (any)` for an `any` job, `amd64 (spilled from arm64)` for a
    preference's job that spilled, `amd64 (moved from arm64)` for one that moved at once, else the architecture
    as requested."""
    if any_of:
        return f"{architecture or '?'} (any)"
    if spilled_from:
        return f"{architecture} (spilled from {spilled_from})"
    if moved_from:
        return f"{architecture} (moved from {moved_from})"
    return architecture


def record(entry: JobRecord) -> None:
    with _lock:
        _records.append(entry)


def jobs() -> list[JobRecord]:
    with _lock:
        return list(_records)


def clear() -> None:
    with _lock:
        _records.clear()


def outcome_label(succeeded: bool, code: str = "", cancelled: bool = False) -> str:
    """The task's outcome as the table says it: a timeout and a cancel by name, else FAILED with the error's code."""
    if succeeded:
        return "SUCCEEDED"
    if code == "TaskTimeout":
        return "TIMED OUT"
    if cancelled:
        return "CANCELLED"
    return f"FAILED {code}".rstrip()


def _ordered(entries: list[JobRecord]) -> list[tuple[JobRecord, bool, bool]]:
    """Every record, each call's attempts together, with whether it is its call's first row and whether
    another attempt of its call followed."""
    calls: dict[str, list[JobRecord]] = {}
    for entry in entries:
        calls.setdefault(entry.call or entry.job_id, []).append(entry)
    rows = []
    for attempts in calls.values():
        attempts.sort(key=lambda e: e.attempt)
        rows += [(entry, index == 0, index < len(attempts) - 1) for index, entry in enumerate(attempts)]
    return rows


def _state_cell(entry: JobRecord, retried: bool) -> str:
    state = entry.outcome + (", retried" if retried else "")
    if entry.armada_state and entry.armada_state != entry.outcome:
        state += f" (Armada: {entry.armada_state})"
    return state


def format_jobs_table(entries: Optional[list[JobRecord]] = None) -> str:
    """The jobs as an aligned text table: task and attempt, requested architecture and its source, placement,
    the task's outcome (with Armada's state where it differs), time, and the job's id (for `armada-flyte logs`)."""
    entries = jobs() if entries is None else entries
    header = ("task", "attempt", "architecture", "from", "node group", "node", "state", "seconds", "job id")
    rows = [
        (
            e.task if first else "",
            str(e.attempt),
            e.architecture or "-",
            e.source,
            e.node_group or "-",
            e.node or "-",
            _state_cell(e, retried),
            f"{e.seconds:.2f}",
            e.job_id or "-",
        )
        for e, first, retried in _ordered(entries)
    ]
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def print_jobs_table(out: Optional[TextIO] = None) -> None:
    """The table, then one line naming the job sets of the runs since the last such line and where to see them."""
    print(format_jobs_table(), file=out)
    console.summary.print_pending(out)
