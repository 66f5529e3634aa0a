"""A started process's output, read line by line on a thread, so a test waits for a line with a deadline
instead of blocking on a read that a hung process never answers."""

from __future__ import annotations

import re
import subprocess
import threading

from support.waiting import wait_until

START_SECONDS = 60.0
"""How long a process may take to print a line it prints at start; generous, for a loaded machine."""


class Output:
    """The lines `process` has printed so far (its stdout must be a text pipe)."""

    def __init__(self, process: subprocess.Popen):
        self.lines: list[str] = []
        self._process = process
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for line in self._process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float = START_SECONDS) -> re.Match:
        """The first line matching `pattern`; fails with the output so far if the process ends or time runs out."""
        ended = object()

        def found() -> re.Match | object | None:
            return self._first(pattern) or (ended if self._process.poll() is not None else None)

        try:
            match = wait_until(found, timeout=timeout, what=f"a line matching {pattern!r}")
        except AssertionError as late:
            raise AssertionError(f"{late}; the output so far:\n{self.text()}") from None
        if match is ended:
            self._thread.join(timeout=5)  # the lines it printed last
            match = self._first(pattern)
            assert match, f"the process exited ({self._process.returncode}) before printing {pattern!r}:\n{self.text()}"
        return match

    def _first(self, pattern: str) -> re.Match | None:
        return next((m for line in list(self.lines) if (m := re.search(pattern, line))), None)

    def text(self) -> str:
        return "\n".join(self.lines)
