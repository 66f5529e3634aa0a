"""Optional authentication, as Armada's server does it: the `authorization` header, basic or bearer.

With credentials configured, every call (except the standard grpc.health.v1 service) must carry
`authorization: basic <base64 user:password>` or `authorization: Bearer <token>`; anything else
is UNAUTHENTICATED with Armada's text (`internal/common/auth/multi.go`, `basic.go`; the scheme
is matched case-insensitively). The authenticated user is the job owner and the requestor of
events: each service reads it from its call (`requestor`) and passes it down. Without credentials
everyone is "anonymous".
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Callable, Iterable, Optional

import grpc

from armada_flyte.server_credentials import Credentials

ANONYMOUS = "anonymous"
UNAUTHENTICATED_MESSAGE = "Request could not be authenticated with any of the supported schemes."
_UNCHECKED_SERVICES = ("/grpc.health.v1.Health/",)


def requestor(credentials: Optional[Credentials], context: grpc.ServicerContext) -> str:
    """Who makes the call `context` serves: the user its `authorization` header authenticates
    ("anonymous" without auth; `RequireAuth` has already refused calls that authenticate no one)."""
    if credentials is None:
        return ANONYMOUS
    return credentials.user_of(_authorization(context.invocation_metadata())) or ANONYMOUS


def _authorization(metadata: Optional[Iterable[tuple[str, Any]]]) -> str:
    return dict(metadata or ()).get("authorization", "")


class RequireAuth(grpc.aio.ServerInterceptor):
    """Refuses calls whose `authorization` header authenticates no one (a grpc.aio interceptor)."""

    def __init__(self, credentials: Credentials):
        self._credentials = credentials

    async def intercept_service(self, continuation: Callable[..., Any], details: grpc.HandlerCallDetails) -> Any:
        handler = await continuation(details)
        if handler is None or details.method.startswith(_UNCHECKED_SERVICES):
            return handler
        if self._credentials.user_of(_authorization(details.invocation_metadata)) is not None:
            return handler
        return _refusing(handler)


def _refusing(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    """A handler of `handler`'s kind (and codec) that answers UNAUTHENTICATED."""

    async def refuse(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, UNAUTHENTICATED_MESSAGE)

    async def refuse_stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        await refuse(request, context)
        yield  # never reached (abort raises); the yield makes this the streaming kind

    codec = {"request_deserializer": handler.request_deserializer, "response_serializer": handler.response_serializer}
    if handler.unary_unary:
        return grpc.unary_unary_rpc_method_handler(refuse, **codec)
    if handler.unary_stream:
        return grpc.unary_stream_rpc_method_handler(refuse_stream, **codec)
    if handler.stream_unary:
        return grpc.stream_unary_rpc_method_handler(refuse, **codec)
    return grpc.stream_stream_rpc_method_handler(refuse_stream, **codec)
