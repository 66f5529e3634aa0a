"""A pod's log: its stdout and stderr lines with the time each arrived, as the kubelet keeps them."""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Optional

NOTE_PREFIX = "[armada-flyte dev] "
_MAX_LINE_BYTES = 64 * 1024


@dataclass(frozen=True)
class LogLine:
    at_us: int
    """Arrival time in whole microseconds since the epoch, the precision timestamps are shown in."""
    stream: str
    text: str


DEFAULT_MAX_BYTES = 16 * 1024 * 1024
"""How much of a pod's log is kept (its newest lines), whatever the length of its lines."""


class PodLog:
    """Lines in arrival order, bounded in bytes so a chatty pod can't exhaust memory (the oldest lines go
    first, as a kubelet rotates logs); stderr's tail kept apart. Nothing is allocated for lines until the
    first one arrives: a run is made at lease time, long before its pod writes anything."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES, stderr_tail_lines: int = 20):
        self._lines: Optional[deque[LogLine]] = None
        self._bytes = 0
        self._max_bytes = max_bytes
        self._stderr_tail_lines = stderr_tail_lines
        self._stderr: Optional[deque[str]] = None
        self._partial: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self._loader: Optional[Callable[[], list[LogLine]]] = None

    @classmethod
    def stored(cls, loader: Callable[[], list[LogLine]]) -> PodLog:
        """The log of a pod from before a restart, read (by `loader`, from the state store) when first asked for."""
        log = cls()
        log._loader = loader
        return log

    def _load(self) -> None:
        if self._loader is not None:
            loader, self._loader = self._loader, None
            for line in loader():
                self._keep(line)

    def feed(self, stream: str, data: bytes) -> None:
        """Raw output as it arrives: complete lines are logged, the unfinished rest waits for more."""
        *lines, rest = (self._partial.pop(stream, b"") + data).split(b"\n")
        if len(rest) > _MAX_LINE_BYTES:
            lines.append(rest)
            rest = b""
        for line in lines:
            self.write(stream, line.decode(errors="replace"))
        if rest:
            self._partial[stream] = rest

    def flush(self) -> None:
        """Log unfinished last lines once the streams have closed."""
        for stream in list(self._partial):
            self.write(stream, self._partial.pop(stream).decode(errors="replace"))

    def write(self, stream: str, text: str) -> None:
        line = LogLine(time.time_ns() // 1000, stream, text.rstrip("\r\n"))
        with self._lock:
            self._load()
            self._keep(line)

    def _keep(self, line: LogLine) -> None:
        if self._lines is None:
            self._lines = deque()
        self._lines.append(line)
        self._bytes += len(line.text.encode())
        while self._bytes > self._max_bytes and len(self._lines) > 1:
            self._bytes -= len(self._lines.popleft().text.encode())
        if line.stream == "stderr":
            if self._stderr is None:
                self._stderr = deque(maxlen=self._stderr_tail_lines)
            self._stderr.append(line.text)

    def note(self, text: str) -> None:
        """A line from the runner or its launcher, marked as such, to say what it did to the pod."""
        self.write("note", NOTE_PREFIX + text)

    def lines(self, since_us: int | None = None, tail: int | None = None) -> list[LogLine]:
        """Lines that arrived after `since_us` (all when None), the last `tail` of them if given."""
        with self._lock:
            self._load()
            lines = [line for line in self._lines or () if since_us is None or line.at_us > since_us]
        return lines[-tail:] if tail else lines

    def texts(self) -> list[str]:
        return [line.text for line in self.lines()]

    def stderr_tail(self) -> str:
        with self._lock:
            self._load()
            return "\n".join(self._stderr or ())
