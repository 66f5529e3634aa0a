"""A gRPC front that checks bearer tokens, then passes each call, unchanged, to an Armada server.

The embedded server has no authentication; put this before it and the connector talks to an
Armada that refuses calls without a valid token (UNAUTHENTICATED, as Armada's auth middleware
answers: internal/common/auth). Messages are forwarded as raw bytes, so every unary method of
every service works without knowing its types. Turned around (no check, `upstream_authorization`
given), it logs a client that has no credentials of its own in to an Armada that needs them.
"""

from __future__ import annotations

import contextlib
from concurrent import futures
from typing import Any, Callable, Iterator, Optional

import grpc

_STREAMING = frozenset({"GetJobSetEvents", "Watch", "GetQueues"})
"""Armada's server-streaming methods (api.Event); every other method is unary."""


class AuthFront:
    def __init__(self, accept: Optional[Callable[[str], bool]]):
        self.accept = accept
        self.seen: list[str] = []
        """Every bearer token presented, in order (valid or not)."""
        self.refused = 0


class _Forward(grpc.GenericRpcHandler):
    def __init__(self, front: AuthFront, upstream: grpc.Channel, upstream_authorization: str):
        self._front, self._upstream = front, upstream
        self._metadata = (("authorization", upstream_authorization),) if upstream_authorization else None

    def service(self, details: grpc.HandlerCallDetails) -> Any:
        method = details.method
        streaming = method.rsplit("/", 1)[-1] in _STREAMING

        def check(context: grpc.ServicerContext) -> None:
            if self._front.accept is None:
                return
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
                return self._upstream.unary_unary(method)(request, timeout=_timeout(context), metadata=self._metadata)
            except grpc.RpcError as exc:
                context.abort(exc.code(), exc.details())

        def stream(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
            check(context)
            try:
                yield from self._upstream.unary_stream(method)(
                    request, timeout=_timeout(context), metadata=self._metadata
                )
            except grpc.RpcError as exc:
                context.abort(exc.code(), exc.details())

        if streaming:
            return grpc.unary_stream_rpc_method_handler(stream)
        return grpc.unary_unary_rpc_method_handler(unary)


def _timeout(context: grpc.ServicerContext) -> Optional[float]:
    """The caller's deadline for the call upstream; None when it set none (its time remaining is then infinite,
    which gRPC would take as a deadline already past)."""
    remaining = context.time_remaining()
    return remaining if remaining < 10**6 else None


@contextlib.contextmanager
def auth_front(
    upstream_url: str,
    accept: Optional[Callable[[str], bool]],
    *,
    upstream_authorization: str = "",
    port: int = 0,
) -> Iterator[tuple[str, AuthFront]]:
    """Serve on 127.0.0.1 (`port`, or a free one); yields (host:port, the front's record). `accept` None
    checks nothing; `upstream_authorization` is sent upstream with every call."""
    front = AuthFront(accept)
    channel = grpc.insecure_channel(upstream_url)
    handler = _Forward(front, channel, upstream_authorization)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), handlers=[handler])
    port = server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    try:
        yield f"127.0.0.1:{port}", front
    finally:
        server.stop(grace=None)
        channel.close()
