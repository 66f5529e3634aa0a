"""Armada's queues: each a name and a priority factor (higher factor, smaller share of the cluster).

As in Armada (`internal/server/queue/queue_repository.go`), creating and updating are one
upsert: creating an existing queue overwrites it, updating an unknown one creates it. What is
stored is what Armada's `queue.NewQueue` keeps (`pkg/client/queue/queue.go`): owners become a
permission granting every verb, and the owner fields themselves are not read back.
"""

from __future__ import annotations

import threading
from typing import Optional

from armada_client.armada import submit_pb2

from armada_flyte.embedded.model.refusals import InvalidArgument, NotFound
from armada_flyte.embedded.store.persistence import EphemeralStore, StateStore
from armada_flyte.embedded.store.write_health import QueueNotWritable

ALL_VERBS = ("submit", "cancel", "preempt", "reprioritize", "watch")
"""`AllPermissionVerbs` in pkg/client/queue/permission_verb.go, granted to a queue's owners."""


class QueueRegistry:
    def __init__(self, store: Optional[StateStore] = None, saved: tuple[submit_pb2.Queue, ...] = ()) -> None:
        self._queues: dict[str, submit_pb2.Queue] = {queue.name: queue for queue in saved}
        self._lock = threading.Lock()
        self._store = store if store is not None else EphemeralStore()

    def create(self, queue: submit_pb2.Queue, creator: str) -> None:
        """CreateQueue: a queue without owners is owned by its creator (`queue_service.go`)."""
        self._put(_stored(queue, "error validating queue: ", creator), "error creating queue: ")

    def update(self, queue: submit_pb2.Queue) -> None:
        self._put(_stored(queue, "error: "), f'error getting queue "{queue.name}": ')

    def _put(self, queue: submit_pb2.Queue, unwritable: str) -> None:
        """Refused while the state can't be written, with Armada's words for a failed repository."""
        self._store.health.require_writable(QueueNotWritable, unwritable)
        with self._lock:
            self._queues[queue.name] = queue
            self._store.queue_saved(queue)

    def remove(self, name: str) -> None:
        with self._lock:
            self._queues.pop(name, None)
            self._store.queue_removed(name)

    def get(self, name: str) -> submit_pb2.Queue:
        with self._lock:
            if name not in self._queues:
                raise NotFound(f'error: could not find queue "{name}"')
            return _copy(self._queues[name])

    def __contains__(self, name: str) -> bool:
        return name in self._queues

    def all(self) -> list[submit_pb2.Queue]:
        with self._lock:
            return [_copy(q) for q in self._queues.values()]

    def set_cordoned(self, name: str, cordoned: bool) -> None:
        with self._lock:
            self._queues[name].cordoned = cordoned
            self._store.queue_saved(self._queues[name])

    def cordoned(self) -> set[str]:
        with self._lock:
            return {name for name, queue in self._queues.items() if queue.cordoned}

    def priority_factors(self) -> dict[str, float]:
        with self._lock:
            return {name: queue.priority_factor for name, queue in self._queues.items()}


def _stored(queue: submit_pb2.Queue, prefix: str, creator: str = "") -> submit_pb2.Queue:
    """The queue as Armada stores it, or InvalidArgument worded as Armada words it."""
    if queue.priority_factor < 1.0:
        raise InvalidArgument(
            f"{prefix}failed to map priority factor. priority factor cannot be lower than 1.0. "
            f"Value: {queue.priority_factor:f}"
        )
    for key, value in queue.labels.items():
        if not key or not value:
            raise InvalidArgument(
                f"{prefix}queue labels must not have an empty key or value, key: {key}, value: {value}"
            )
    stored = submit_pb2.Queue(
        name=queue.name,
        priority_factor=queue.priority_factor,
        cordoned=queue.cordoned,
        labels=dict(queue.labels),
        retry_policies=list(queue.retry_policies),
    )
    for name, limits in queue.resource_limits_by_priority_class_name.items():
        stored.resource_limits_by_priority_class_name[name].CopyFrom(limits)
    users = list(queue.user_owners) or ([creator] if creator else [])
    subjects = [submit_pb2.Queue.Permissions.Subject(kind="User", name=u) for u in users]
    subjects += [submit_pb2.Queue.Permissions.Subject(kind="Group", name=g) for g in queue.group_owners]
    if subjects:
        stored.permissions.append(submit_pb2.Queue.Permissions(subjects=subjects, verbs=list(ALL_VERBS)))
    stored.permissions.extend(queue.permissions)
    return stored


def _copy(queue: submit_pb2.Queue) -> submit_pb2.Queue:
    copied = submit_pb2.Queue()
    copied.CopyFrom(queue)
    return copied
