"""Which lines of a task's pod log a local run prints: the task's own output and its traceback, not a0's chatter.

a0 (Flyte's runtime in the pod) logs its start and end at WARNING for every task, logs a failure twice
(the traceback, then the error again as Flyte's error record), and the embedded server opens each pod's log
with the same note about the host's architecture. The pod's log keeps all of it (the view, `armada-flyte
logs`); the console gets the task's output, the traceback once (without Flyte's and our own frames), and
each note once per process.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

_RICH_RECORD = re.compile(r"^\d\d:\d\d:\d\d\.\d+ +(DEBUG|INFO|WARNING|ERROR|CRITICAL) ")
"""A record of Flyte's console log format (time, level), whose further lines are indented."""
_PLAIN_RECORD = re.compile(r"^\[flyte\] (DEBUG|INFO|WARNING|ERROR|CRITICAL) ")
"""A record logged before Flyte set up its console format."""
_RUNTIME_CHATTER = re.compile(r"Flyte runtime (started|completed) for action \S+ with run name ")
_ERROR_RECORD = re.compile(r"Task \S+ failed with error: Error\(err=")
"""a0's second report of a failure (the error it uploads), after the traceback."""
_FAILED = re.compile(r" - Task failed with error: ")
"""a0's first report of a failure: its further lines are the task's traceback."""
_TOOL_FRAME = re.compile(r'^\s*File "[^"]*[/\\](site-packages|src)[/\\](flyte|armada_flyte)[/\\]')
"""A traceback frame in Flyte's code or ours, not the task's."""
CONTINUATION_INDENT = 16
"""A record's further lines start under its message, past the time column (`HH:MM:SS.ffffff `) at least."""
NOTE_PREFIX = "[armada-flyte "
"""Lines our servers write into a pod's log (`[armada-flyte dev] node set arm64 is arm64 but ...`)."""

_notes_seen: set[str] = set()
_notes_lock = threading.Lock()


def first_time(note: str) -> bool:
    """True the first time this process sees `note` (a repeated note is printed once)."""
    with _notes_lock:
        if note in _notes_seen:
            return False
        _notes_seen.add(note)
        return True


@dataclass
class PodLogLines:
    """Reads one pod's log as it grows, and says which of its new lines to print."""

    traceback_printed: bool = False
    """A task's traceback was printed (the driver's line about the failure need not repeat its message)."""
    _record: str = field(default="", repr=False)
    """What the multi-line record being read is: "" (none), "drop", "traceback"."""
    _indent: int = field(default=0, repr=False)
    """The record's further lines' indent, set by its first further line (0: not yet seen)."""
    _in_tool_frame: bool = field(default=False, repr=False)

    def restart(self) -> None:
        """The job's pod started again (Armada retried the run): its log starts over."""
        self._record, self._in_tool_frame = "", False

    def shown(self, lines: list[str]) -> list[str]:
        """The lines of `lines` (the log's next lines, in order) to print, right-trimmed."""
        return [kept for line in lines if (kept := self._one(line.rstrip())) is not None]

    def _one(self, line: str) -> str | None:
        indent = len(line) - len(line.lstrip(" "))
        if self._record and line.strip() and indent >= CONTINUATION_INDENT:
            self._indent = self._indent or indent
            return self._continued(line[min(indent, self._indent) :])
        self._record, self._in_tool_frame = "", False
        if _RICH_RECORD.match(line) or _PLAIN_RECORD.match(line):
            return self._record_start(line)
        if line.startswith(NOTE_PREFIX):
            return line if first_time(line) else None
        return line

    def _record_start(self, line: str) -> str | None:
        if _RUNTIME_CHATTER.search(line) or _ERROR_RECORD.search(line):
            self._record = "drop"
        elif _FAILED.search(line):
            self._record = "traceback"
        else:
            return line
        self._indent = 0
        return None

    def _continued(self, text: str) -> str | None:
        if self._record == "drop":
            return None
        if text.startswith("  File "):
            self._in_tool_frame = bool(_TOOL_FRAME.match(text))
        elif not text.startswith("    "):  # past the frames: "Traceback ...", the exception's lines
            self._in_tool_frame = False
        if self._in_tool_frame:
            return None
        self.traceback_printed = True
        return text
