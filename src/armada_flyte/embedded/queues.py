"""Armada's queues: each a name and a priority factor (higher factor, smaller share of the cluster)."""

from __future__ import annotations

import threading

from armada_client.armada import submit_pb2

from armada_flyte.embedded.refusals import AlreadyExists, InvalidArgument, NotFound


class QueueRegistry:
    def __init__(self) -> None:
        self._queues: dict[str, submit_pb2.Queue] = {}
        self._lock = threading.Lock()

    def create(self, queue: submit_pb2.Queue) -> None:
        _check(queue)
        with self._lock:
            if queue.name in self._queues:
                raise AlreadyExists(f"error creating queue: queue {queue.name} already exists")
            self._queues[queue.name] = _copy(queue)

    def update(self, queue: submit_pb2.Queue) -> None:
        _check(queue)
        with self._lock:
            if queue.name not in self._queues:
                raise NotFound(f"error: queue {queue.name} does not exist")
            self._queues[queue.name] = _copy(queue)

    def remove(self, name: str) -> None:
        with self._lock:
            self._queues.pop(name, None)

    def get(self, name: str) -> submit_pb2.Queue:
        with self._lock:
            if name not in self._queues:
                raise NotFound(f"error: queue {name} does not exist")
            return _copy(self._queues[name])

    def __contains__(self, name: str) -> bool:
        return name in self._queues

    def all(self) -> list[submit_pb2.Queue]:
        with self._lock:
            return [_copy(q) for q in self._queues.values()]

    def priority_factors(self) -> dict[str, float]:
        with self._lock:
            return {name: queue.priority_factor for name, queue in self._queues.items()}


def _check(queue: submit_pb2.Queue) -> None:
    if not queue.name:
        raise InvalidArgument("error validating queue: queue name must not be empty")
    if queue.priority_factor < 1.0:
        raise InvalidArgument(
            f"error validating queue: priority factor of queue {queue.name} is "
            f"{queue.priority_factor}; the minimum is 1"
        )


def _copy(queue: submit_pb2.Queue) -> submit_pb2.Queue:
    copied = submit_pb2.Queue()
    copied.CopyFrom(queue)
    return copied
