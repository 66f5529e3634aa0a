"""A gRPC proxy that counts the calls it forwards, in a process of its own: real Armada's calls can't be
counted inside its server, so both servers' calls are counted here, where they arrive, the same way.

It forwards bytes (it decodes nothing but SubmitJobs, whose requests it keeps so a benchmark can send the
same jobs in the same batches again with the raw `armada_client`). As a script, `counting_proxy.py
UPSTREAM` prints its address, then answers each line on stdin (`counts`, `submits`, `forget-submits`,
`freeze-streams`, `thaw-streams`)
with one JSON line; it stops at the end of stdin.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import subprocess
import sys
import threading
import time
from collections import Counter
from typing import Any, Iterator

import grpc

STREAMING = frozenset({"/api.Event/GetJobSetEvents", "/api.Event/Watch"})
"""The Armada methods that answer with a stream; every other one is unary."""
SUBMIT_JOBS = "/api.Submit/SubmitJobs"
MESSAGE_LIMIT = [("grpc.max_receive_message_length", 64 * 1024 * 1024), ("grpc.max_send_message_length", -1)]
ARMADA_KEEPALIVE_POLICY = [
    ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
]
"""Armada's server's keepaliveEnforcementPolicy (minTime 10s, permitWithoutStream), so clients' pings pass as there."""
NOT_FORWARDED = frozenset({"user-agent", "content-type", "te", "grpc-timeout", "grpc-accept-encoding"})


class Tally:
    """What the proxy saw: calls by method name, and the SubmitJobs requests with the most in flight at once and
    how many were in flight on average (from the first call's start to the last one's answer)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: Counter[str] = Counter()
        self._submits: list[bytes] = []
        self._submits_in_flight = 0
        self._most_submits_in_flight = 0
        self._in_flight_seconds = 0.0
        """Calls in flight summed over time, since the first submit."""
        self._changed: float | None = None
        self._first: float | None = None
        self._last: float | None = None
        self.streams_frozen = False
        """Stream replies are held, the streams left open: a connection that stops forwarding without closing."""

    def _advance(self) -> float:
        now = time.monotonic()
        if self._changed is not None:
            self._in_flight_seconds += self._submits_in_flight * (now - self._changed)
        self._changed = now
        return now

    def called(self, method: str, request: bytes) -> None:
        with self._lock:
            self._calls[method.rsplit("/", 1)[-1]] += 1
            if method == SUBMIT_JOBS:
                self._submits.append(request)
                now = self._advance()
                self._first = now if self._first is None else self._first
                self._submits_in_flight += 1
                self._most_submits_in_flight = max(self._most_submits_in_flight, self._submits_in_flight)

    def submit_answered(self) -> None:
        with self._lock:
            self._last = self._advance()
            self._submits_in_flight -= 1

    def answer(self, command: str) -> dict[str, Any]:
        with self._lock:
            if command == "counts":
                return dict(self._calls)
            if command == "submits":
                return {
                    "requests": [base64.b64encode(r).decode() for r in self._submits],
                    "most_in_flight": self._most_submits_in_flight,
                    "mean_in_flight": self._mean_in_flight(),
                }
            if command in ("freeze-streams", "thaw-streams"):
                self.streams_frozen = command == "freeze-streams"
                return {}
            if command == "forget-submits":
                self._submits, self._most_submits_in_flight = [], self._submits_in_flight
                self._in_flight_seconds, self._changed, self._first, self._last = 0.0, time.monotonic(), None, None
                return {}
        return {"error": f"unknown command {command!r}"}

    def _mean_in_flight(self) -> float:
        if self._first is None or self._last is None or self._last <= self._first:
            return 0.0
        return self._in_flight_seconds / (self._last - self._first)


def _forwarded(context: grpc.aio.ServicerContext) -> list[tuple[str, Any]]:
    return [
        (key, value)
        for key, value in (context.invocation_metadata() or ())
        if not key.startswith(":") and key not in NOT_FORWARDED
    ]


def _handler(channel: grpc.aio.Channel, tally: Tally, method: str) -> grpc.RpcMethodHandler:
    if method in STREAMING:
        upstream_stream = channel.unary_stream(method)

        async def stream(request: bytes, context: grpc.aio.ServicerContext):
            tally.called(method, request)
            call = upstream_stream(request, metadata=_forwarded(context), timeout=context.time_remaining())
            try:
                async for reply in call:
                    while tally.streams_frozen:  # held, not dropped: the client sees a stream gone quiet
                        await asyncio.sleep(0.05)
                    yield reply
            except grpc.aio.AioRpcError as error:
                await context.abort(error.code(), error.details() or "")
            finally:
                call.cancel()

        return grpc.unary_stream_rpc_method_handler(stream)

    upstream_unary = channel.unary_unary(method)

    async def unary(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        tally.called(method, request)
        try:
            return await upstream_unary(request, metadata=_forwarded(context), timeout=context.time_remaining())
        except grpc.aio.AioRpcError as error:
            await context.abort(error.code(), error.details() or "")
        finally:
            if method == SUBMIT_JOBS:
                tally.submit_answered()

    return grpc.unary_unary_rpc_method_handler(unary)


class _Forwarder(grpc.GenericRpcHandler):
    def __init__(self, channel: grpc.aio.Channel, tally: Tally) -> None:
        self._channel, self._tally = channel, tally
        self._handlers: dict[str, grpc.RpcMethodHandler] = {}

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        method = handler_call_details.method
        if method not in self._handlers:
            self._handlers[method] = _handler(self._channel, self._tally, method)
        return self._handlers[method]


async def _serve(upstream: str) -> None:
    tally = Tally()
    async with grpc.aio.insecure_channel(upstream, options=MESSAGE_LIMIT) as channel:
        server = grpc.aio.server(options=MESSAGE_LIMIT + ARMADA_KEEPALIVE_POLICY)
        server.add_generic_rpc_handlers((_Forwarder(channel, tally),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        print(f"127.0.0.1:{port}", flush=True)
        loop = asyncio.get_running_loop()
        stdin_closed = loop.create_future()

        def answer_stdin() -> None:
            for line in sys.stdin:
                print(json.dumps(tally.answer(line.strip())), flush=True)
            loop.call_soon_threadsafe(stdin_closed.set_result, None)

        threading.Thread(target=answer_stdin, daemon=True).start()
        await stdin_closed
        await server.stop(grace=1)


class CountingProxy:
    """The proxy process, seen from a benchmark: its address, and what it counted."""

    def __init__(self, process: subprocess.Popen, address: str):
        self._process = process
        self.address = address
        self._lock = threading.Lock()

    def _ask(self, command: str) -> Any:
        assert self._process.stdin is not None and self._process.stdout is not None
        with self._lock:
            self._process.stdin.write(command + "\n")
            self._process.stdin.flush()
            return json.loads(self._process.stdout.readline())

    def counts(self) -> dict[str, int]:
        """Calls forwarded so far, by method name (e.g. `GetJobStatus`)."""
        return self._ask("counts")

    def submits(self) -> tuple[list[bytes], int]:
        """The SubmitJobs requests since the last `forget_submits`, and the most that were in flight at once."""
        answer = self._ask("submits")
        return [base64.b64decode(r) for r in answer["requests"]], answer["most_in_flight"]

    def mean_submits_in_flight(self) -> float:
        """How many SubmitJobs calls were in flight on average since the last `forget_submits` (from the first
        call to the last answer): the raw floor sends with the most, the connector's calls overlap less."""
        return self._ask("submits")["mean_in_flight"]

    def forget_submits(self) -> None:
        self._ask("forget-submits")

    def freeze_streams(self, frozen: bool = True) -> None:
        """Stop forwarding the event streams' messages (open ones and new ones) without closing them; unary
        calls still pass. `False` forwards again."""
        self._ask("freeze-streams" if frozen else "thaw-streams")


@contextlib.contextmanager
def counting_proxy(upstream: str) -> Iterator[CountingProxy]:
    """A proxy in front of `upstream` (host:port) for as long as this lasts."""
    process = subprocess.Popen(
        [sys.executable, __file__, upstream], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        address = process.stdout.readline().strip()
        if not address:
            raise RuntimeError(f"the counting proxy did not start (exit code {process.wait(timeout=30)})")
        yield CountingProxy(process, address)
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


if __name__ == "__main__":
    asyncio.run(_serve(sys.argv[1]))
