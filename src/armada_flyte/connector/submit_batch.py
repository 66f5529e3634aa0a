"""Concurrent creates for one queue and job set share one SubmitJobs call.

Armada takes many items per request, and one item per call caps a connector at a few hundred
creates a second. Armada fails a whole request when one item is invalid (the first failing
item's reason, INVALID_ARGUMENT), so a refused batch is sent again one item per call: only the
refused create fails, with Armada's reason, and the others get their ids.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, Generic, TypeVar

from armada_flyte.errors import SubmissionRefused

Item = TypeVar("Item")
Send = Callable[[str, str, list[Item]], Awaitable[list[str]]]
"""Submit items to (queue, job set); returns their job ids in order."""


class SubmitBatcher(Generic[Item]):
    """Gathers one event loop's creates per (queue, job set) for `window` seconds, at most `max_items`
    per call."""

    def __init__(self, send: Send[Item], window: float, max_items: int):
        self._send = send
        self._window = window
        self._max_items = max_items
        self._pending: dict[tuple[str, str], list[tuple[Item, asyncio.Future[str]]]] = {}
        self._sending: set[asyncio.Task[None]] = set()  # the loop keeps only weak references

    async def submit(self, queue: str, job_set: str, item: Item) -> str:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str] = loop.create_future()
        key = (queue, job_set)
        batch = self._pending.setdefault(key, [])
        batch.append((item, future))
        if len(batch) >= self._max_items:
            self._start(self._pending.pop(key), key)
        elif len(batch) == 1:
            loop.call_later(self._window, self._due, key, batch)
        return await future

    def _due(self, key: tuple[str, str], batch: list[tuple[Item, asyncio.Future[str]]]) -> None:
        if self._pending.get(key) is batch:  # not already sent for being full
            self._start(self._pending.pop(key), key)

    def _start(self, batch: list[tuple[Item, asyncio.Future[str]]], key: tuple[str, str]) -> None:
        task = asyncio.ensure_future(self._deliver(batch, *key))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

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
