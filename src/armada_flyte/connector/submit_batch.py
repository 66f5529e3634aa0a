"""Concurrent creates for one queue and job set share one SubmitJobs call.

Armada takes many items per request, and one item per call caps a connector at a few hundred
creates a second. A batch goes out `window` seconds after its first create, or at once when it is
full; while a call for the same queue and job set is on its way, the next batch keeps gathering
until that call returns (or it fills up), so under load batches grow with the call's latency
instead of every window sending a few items. Armada fails a whole request when one item is
invalid (the first failing item's reason, INVALID_ARGUMENT), so a refused batch is sent again one
item per call: only the refused create fails, with Armada's reason, and the others get their ids.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, Generic, TypeVar

from armada_flyte.errors import SubmissionRefused

Item = TypeVar("Item")
Send = Callable[[str, str, list[Item]], Awaitable[list[str]]]
"""Submit items to (queue, job set); returns their job ids in order."""
Key = tuple[str, str]


class SubmitBatcher(Generic[Item]):
    """Gathers one event loop's creates per (queue, job set) for `window` seconds (and while a call for
    them is in flight), at most `max_items` per call."""

    def __init__(self, send: Send[Item], window: float, max_items: int):
        self._send = send
        self._window = window
        self._max_items = max_items
        self._pending: dict[Key, list[tuple[Item, asyncio.Future[str]]]] = {}
        self._due: set[Key] = set()
        """Keys whose pending batch is past its window, waiting for the call in flight."""
        self._in_flight: dict[Key, int] = {}
        self._sending: set[asyncio.Task[None]] = set()  # the loop keeps only weak references

    async def submit(self, queue: str, job_set: str, item: Item) -> str:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str] = loop.create_future()
        key = (queue, job_set)
        batch = self._pending.setdefault(key, [])
        batch.append((item, future))
        if len(batch) >= self._max_items:
            self._start(key)
        elif len(batch) == 1:
            loop.call_later(self._window, self._window_ended, key, batch)
        return await future

    def _window_ended(self, key: Key, batch: list[tuple[Item, asyncio.Future[str]]]) -> None:
        if self._pending.get(key) is not batch:  # already sent for being full
            return
        if self._in_flight.get(key):
            self._due.add(key)  # goes out when the call in flight returns
        else:
            self._start(key)

    def _start(self, key: Key) -> None:
        batch = self._pending.pop(key)
        self._due.discard(key)
        self._in_flight[key] = self._in_flight.get(key, 0) + 1
        task = asyncio.ensure_future(self._deliver(batch, *key))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)
        task.add_done_callback(lambda _: self._returned(key))

    def _returned(self, key: Key) -> None:
        left = self._in_flight.pop(key) - 1
        if left:
            self._in_flight[key] = left
        if key in self._due and key in self._pending:
            self._start(key)

    async def _deliver(self, batch: list[tuple[Item, asyncio.Future[str]]], queue: str, job_set: str) -> None:
        try:
            ids = await self._send(queue, job_set, [item for item, _ in batch])
        except SubmissionRefused as exc:
            if len(batch) > 1:  # find the refused item: each alone, concurrently
                await asyncio.gather(*(self._deliver([one], queue, job_set) for one in batch))
            else:
                _fail(batch, exc)
            return
        except BaseException as exc:  # every create of the batch sees the failure
            _fail(batch, exc)
            return
        for (_, future), job_id in zip(batch, ids, strict=True):
            if not future.done():
                future.set_result(job_id)


def _fail(batch: list[tuple[Item, asyncio.Future[str]]], exc: BaseException) -> None:
    for _, future in batch:
        if not future.done():
            future.set_exception(exc)
