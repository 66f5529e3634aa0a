"""`kubectl logs POD` against the embedded cluster: the `log` subresource of a pod, as plain text.

The lines are the pod's log as the executor captured it (the same lines Armada's log service
serves). Read: `container` (must name one of the pod's containers; the log holds all of the pod's
output), `tailLines`, `timestamps`, and `follow` (the handler keeps writing until the pod ends).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from armada_flyte.pod_runner.pod_log import LogLine


class BadLogRequest(ValueError):
    """A query Kubernetes would answer 400 BadRequest."""


@dataclass(frozen=True)
class LogRequest:
    tail: int
    timestamps: bool
    follow: bool

    @classmethod
    def of(cls, query: dict[str, str], pod_name: str, containers: list[str]) -> LogRequest:
        container = query.get("container", "")
        if container and container not in containers:
            raise BadLogRequest(
                f"container {container} is not valid for pod {pod_name}; its containers: {', '.join(containers)}"
            )
        tail_text = query.get("tailLines", "")
        try:
            tail = int(tail_text) if tail_text else -1
        except ValueError:
            raise BadLogRequest(f"tailLines {tail_text!r} is not a number") from None
        flag = lambda name: query.get(name, "").lower() in ("true", "1")  # noqa: E731
        return cls(tail, flag("timestamps"), flag("follow"))

    def first(self, lines: list[LogLine]) -> list[LogLine]:
        """The lines the answer starts with (the last `tailLines` of them when asked; -1: all)."""
        if self.tail < 0:
            return lines
        return lines[len(lines) - self.tail :] if self.tail else []

    def text(self, lines: list[LogLine]) -> str:
        return "".join(f"{_stamp(line.at_us)} {line.text}\n" if self.timestamps else f"{line.text}\n" for line in lines)


def _stamp(at_us: int) -> str:
    moment = dt.datetime.fromtimestamp(at_us / 1e6, dt.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def container_names(pod: dict[str, Any]) -> list[str]:
    return [c["name"] for c in pod["spec"]["containers"]]
