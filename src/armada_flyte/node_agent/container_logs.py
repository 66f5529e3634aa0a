"""A container's log as a kubelet's `/containerLogs/{namespace}/{pod}/{container}` answers it. Pure.

The API server passes `kubectl logs` and Armada's Binoculars on to the kubelet with these query options:
`timestamps` (each line starts with its RFC 3339 time and a space: Binoculars always asks for it and splits
on that space), `sinceTime` / `sinceSeconds`, `tailLines` and `limitBytes`. `follow` gets what there is now.
The pod runner keeps one log per pod (its containers' stdout and stderr together), so every container of a
pod shows the pod's lines; the runner's own notes (what it did to the pod) are not container output and
are left out, as a kubelet's events are.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

from armada_flyte.pod_runner.pod_log import LogLine

CONTAINER_STREAMS = ("stdout", "stderr")


class BadLogRequest(ValueError):
    """A query option the kubelet would refuse (400), with what was wrong."""


@dataclass(frozen=True)
class LogOptions:
    timestamps: bool = False
    since_us: Optional[int] = None
    tail_lines: Optional[int] = None
    limit_bytes: Optional[int] = None

    @classmethod
    def from_query(cls, query: Mapping[str, list[str]], now_us: int) -> LogOptions:
        """The options of a query string (as urllib.parse.parse_qs gives it)."""

        def one(name: str) -> Optional[str]:
            values = query.get(name)
            return values[-1] if values else None

        since_us = None
        if one("sinceTime"):
            since_us = _parse_time_us(one("sinceTime") or "")
        elif one("sinceSeconds"):
            since_us = now_us - _non_negative("sinceSeconds", one("sinceSeconds")) * 1_000_000
        tail = one("tailLines")
        limit = one("limitBytes")
        return cls(
            timestamps=(one("timestamps") or "").lower() in ("true", "1"),
            since_us=since_us,
            tail_lines=_non_negative("tailLines", tail) if tail is not None else None,
            limit_bytes=_non_negative("limitBytes", limit) if limit is not None else None,
        )


def log_text(lines: Iterable[LogLine], options: LogOptions) -> bytes:
    """The container output lines the options select, one per line, as the kubelet writes them."""
    chosen = [
        line
        for line in lines
        if line.stream in CONTAINER_STREAMS and (options.since_us is None or line.at_us >= options.since_us)
    ]
    if options.tail_lines is not None:
        chosen = chosen[-options.tail_lines :] if options.tail_lines else []
    text = "".join(f"{_stamp(line.at_us)} {line.text}\n" if options.timestamps else f"{line.text}\n" for line in chosen)
    data = text.encode()
    return data[: options.limit_bytes] if options.limit_bytes is not None else data


def _stamp(at_us: int) -> str:
    """RFC 3339 with nanoseconds, as the kubelet stamps lines (Binoculars parses time.RFC3339Nano)."""
    at = datetime.datetime.fromtimestamp(at_us / 1_000_000, tz=datetime.timezone.utc)
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at_us % 1_000_000:06d}000Z"


def _parse_time_us(text: str) -> int:
    try:
        at = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BadLogRequest(f"sinceTime {text!r} is not an RFC 3339 time") from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=datetime.timezone.utc)
    return int(at.timestamp() * 1_000_000)


def _non_negative(name: str, text: Optional[str]) -> int:
    try:
        value = int(text or "")
    except ValueError:
        raise BadLogRequest(f"{name} {text!r} is not a whole number") from None
    if value < 0:
        raise BadLogRequest(f"{name} must not be negative, got {value}")
    return value
