"""A gRPC front that checks bearer tokens, then passes each call, unchanged, to an Armada server.

The embedded server has no authentication; put this before it and the connector talks to an
Armada that refuses calls without a valid token (UNAUTHENTICATED, as Armada's auth middleware
answers: internal/common/auth). Messages are forwarded as raw bytes, so every unary method of
every service works without knowing its types.
"""

from __future__ import annotations

import contextlib
from concurrent import futures
from typing import Any, Callable, Iterator

import grpc

_STREAMING = frozenset({"GetJobSetEvents", "Watch"})
"""Armada's server-streaming methods (api.Event); every other method is unary."""


class AuthFront:
    def __init__(self, accept: Callable[[str], bool]):
        self.accept = accept
        self.seen: list[str] = []
        """Every bearer token presented, in order (valid or not)."""
        self.refused = 0


class _Forward(grpc.GenericRpcHandler):
    def __init__(self, front: AuthFront, upstream: grpc.Channel):
        self._front, self._upstream = front, upstream

    def service(self, details: grpc.HandlerCallDetails) -> Any:
        method = details.method
        streaming = method.rsplit("/", 1)[-1] in _STREAMING

        def check(context: grpc.ServicerContext) -> None:
            header = dict(context.invocation_metadata()).get("authorization", "")
            scheme, _, token = header.partition(" ")
            if scheme.lower() == "bearer":
                self._front.seen.append(token)
            if scheme.lower() != "bearer" or not self._front.accept(token):
                self._front.refused += 1
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "request could not be authenticated")

        def unary(request: bytes, context: grpc.ServicerContext) -> bytes:
            check(context)
            try:
                return self._upstream.unary_unary(method)(request, timeout=context.time_remaining())
            except grpc.RpcError as exc:
                context.abort(exc.code(), exc.details())

        def stream(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
            check(context)
            try:
                yield from self._upstream.unary_stream(method)(request, timeout=context.time_remaining())
            except grpc.RpcError as exc:
                context.abort(exc.code(), exc.details())

        if streaming:
            return grpc.unary_stream_rpc_method_handler(stream)
        return grpc.unary_unary_rpc_method_handler(unary)


@contextlib.contextmanager
def auth_front(upstream_url: str, accept: Callable[[str], bool]) -> Iterator[tuple[str, AuthFront]]:
    """Serve on 127.0.0.1; yields (host:port, the front's record)."""
    front = AuthFront(accept)
    channel = grpc.insecure_channel(upstream_url)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), handlers=[_Forward(front, channel)])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", front
    finally:
        server.stop(grace=None)
        channel.close()
