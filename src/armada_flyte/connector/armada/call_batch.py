"""Concurrent calls of one kind for one queue and job set share one Armada call.

Armada takes many items per request (jobs to submit, ids to cancel, ids to look up), and one item
per call caps a connector at a few hundred tasks a second. A batch goes out `window` seconds after
its first item, or at once when it is full; while a call for the same key is on its way, the next
batch keeps gathering until that call returns (or it fills up), so under load batches grow with the
call's latency instead of every window sending a few items. Armada fails a whole request when one
item is refused (for SubmitJobs, the first failing item's reason, INVALID_ARGUMENT), so a refused
batch is sent again one item per call: only the refused item fails, with Armada's reason.

With `max_wait` above `window`, the window is a quiet period instead: a batch goes out once no item
arrived for `window` seconds (or `max_wait` after its first, or full), so a burst that takes longer
to arrive than one window (an abort deleting a thousand tasks) still goes out as one batch.

With `by_turns` (creates), a batch is sized by what keeps coming rather than by a fixed wait: it gathers
while the event loop's turns keep bringing items for its key; a lone item (none came for its key within
`window` before it) then goes out at the first turn that brought none, at once; a batch of a stream of
items (each within `window` of the one before) waits for a gap of `window` in the stream. Either way at
most `max_wait` after its first item (or full), and while a call for its key is in flight, until it returns.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")
Key = tuple[str, str]
"""(queue, job set); calls that may mix job sets use one fixed key."""
Send = Callable[[str, str, list[Item]], Awaitable[list[Result]]]
"""Send items for (queue, job set) in one call; returns one result per item, in order."""
_KEYS_KEPT = 256
"""`by_turns`: past this many keys' last arrival times, those older than a window are dropped."""
Refusal = Callable[[BaseException], bool]
"""Whether an error refused the request's content (so each item is tried alone), not the call."""


def never_split(exc: BaseException) -> bool:
    """For lookups: an error fails every item of the batch alike (the next poll asks again)."""
    return False


class CallBatcher(Generic[Item, Result]):
    """Gathers one event loop's items per key for `window` seconds (and while a call for the key is in
    flight), at most `max_items` per call; a batch that `refused` is sent again item by item."""

    def __init__(
        self,
        send: Send[Item, Result],
        window: float,
        max_items: int,
        refused: Refusal = never_split,
        max_wait: float = 0.0,
        *,
        by_turns: bool = False,
        max_in_flight: int = 1,
    ):
        self._send = send
        self._by_turns = by_turns
        self._arrived: set[Key] = set()
        """Keys that got an item since their batch's last look at the loop's turn (`by_turns`)."""
        self._latest: dict[Key, float] = {}
        """When each key last got an item, across batches (`by_turns`: whether a new batch is part of a stream)."""
        self._streams: set[Key] = set()
        """Keys whose pending batch began within `window` of the key's previous item (`by_turns`)."""
        self._window = window
        self._max_items = max_items
        self._refused = refused
        self._max_wait = max_wait
        self._max_in_flight = max_in_flight
        self._pending: dict[Key, list[tuple[Item, asyncio.Future[Result]]]] = {}
        self._arrivals: dict[Key, tuple[float, float]] = {}
        """(first, latest) arrival time of each pending batch, for a quiet-period window."""
        self._due: set[Key] = set()
        """Keys whose pending batch is past its window, waiting for the call in flight."""
        self._in_flight: dict[Key, int] = {}
        self._sending: set[asyncio.Task[None]] = set()  # the loop keeps only weak references

    async def submit(self, queue: str, job_set: str, item: Item) -> Result:
        """The item's result, once the call that carried it returned."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Result] = loop.create_future()
        key = (queue, job_set)
        batch = self._pending.setdefault(key, [])
        batch.append((item, future))
        now = loop.time()
        self._arrivals[key] = (self._arrivals[key][0] if len(batch) > 1 else now, now)
        if self._by_turns:
            if len(batch) == 1 and now - self._latest.get(key, -self._window) < self._window:
                self._streams.add(key)
            self._latest[key] = now
        if len(batch) >= self._max_items:
            self._start(key)
        elif self._by_turns:
            self._arrived.add(key)
            if len(batch) == 1:
                loop.call_soon(self._turn_ended, key, batch)
        elif len(batch) == 1:
            loop.call_later(self._window, self._window_ended, key, batch)
        return await future

    def _turn_ended(self, key: Key, batch: list[tuple[Item, asyncio.Future[Result]]]) -> None:
        """`by_turns`: a loop turn (or a stream's gap) passed; the batch waits on while items keep coming."""
        if self._pending.get(key) is not batch:  # already sent for being full
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        first, latest = self._arrivals[key]
        if now - first < self._max_wait:
            if key in self._arrived:  # the turn brought an item: look again after the next one
                self._arrived.discard(key)
                loop.call_soon(self._turn_ended, key, batch)
                return
            if key in self._streams and now - latest < self._window:  # a stream: wait for its gap
                loop.call_later(min(latest + self._window, first + self._max_wait) - now, self._turn_ended, key, batch)
                return
        self._start_when_free(key)

    def _window_ended(self, key: Key, batch: list[tuple[Item, asyncio.Future[Result]]]) -> None:
        if self._pending.get(key) is not batch:  # already sent for being full
            return
        if self._max_wait > self._window:
            first, latest = self._arrivals[key]
            now = asyncio.get_running_loop().time()
            due = min(latest + self._window, first + self._max_wait)
            if now < due:  # items still arriving: wait for a quiet window
                asyncio.get_running_loop().call_later(due - now, self._window_ended, key, batch)
                return
        self._start_when_free(key)

    def _start_when_free(self, key: Key) -> None:
        """Send the key's batch now, or, with `max_in_flight` calls for it on their way, when one returns."""
        if self._in_flight.get(key, 0) >= self._max_in_flight:
            self._due.add(key)
        else:
            self._start(key)

    def _start(self, key: Key) -> None:
        batch = self._pending.pop(key)
        self._arrivals.pop(key, None)
        self._due.discard(key)
        self._arrived.discard(key)
        self._streams.discard(key)
        if len(self._latest) > _KEYS_KEPT:  # forget keys quiet for longer than a window
            now = asyncio.get_running_loop().time()
            self._latest = {k: at for k, at in self._latest.items() if now - at < self._window}
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

    async def _deliver(self, batch: list[tuple[Item, asyncio.Future[Result]]], queue: str, job_set: str) -> None:
        try:
            results = await self._send(queue, job_set, [item for item, _ in batch])
        except BaseException as exc:
            if len(batch) > 1 and self._refused(exc):  # find the refused item: each alone, concurrently
                await asyncio.gather(*(self._deliver([one], queue, job_set) for one in batch))
            else:  # every item of the batch sees the failure
                _fail(batch, exc)
            return
        for (_, future), result in zip(batch, results, strict=True):
            if not future.done():
                future.set_result(result)


def _fail(batch: list[tuple[Item, asyncio.Future[Result]]], exc: BaseException) -> None:
    for _, future in batch:
        if not future.done():
            future.set_exception(exc)
