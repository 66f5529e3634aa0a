"""Optional authentication, as Armada's server does it: the `authorization` header, basic or bearer.

With credentials configured, every call (except the standard grpc.health.v1 service) must carry
`authorization: basic <base64 user:password>` or `authorization: Bearer <token>`; anything else
is UNAUTHENTICATED with Armada's text (`internal/common/auth/multi.go`, `basic.go`; the scheme
is matched case-insensitively). The authenticated user is the job owner and the requestor of
events. Without credentials everyone is "anonymous", as today.
"""

from __future__ import annotations

import base64
import binascii
import contextvars
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional

import grpc

from armada_flyte.errors import InvalidConfig

ANONYMOUS = "anonymous"
BEARER_USER = "bearer"
"""The user a valid bearer token authenticates as."""
UNAUTHENTICATED_MESSAGE = "Request could not be authenticated with any of the supported schemes."
_UNCHECKED_SERVICES = ("/grpc.health.v1.Health/",)

_user: contextvars.ContextVar[str] = contextvars.ContextVar("armada_user", default=ANONYMOUS)


def current_user() -> str:
    """Who makes the call being served ("anonymous" without auth)."""
    return _user.get()


@dataclass(frozen=True)
class Credentials:
    """Accepted users (name -> password) and bearer tokens."""

    users: Mapping[str, str] = field(default_factory=dict)
    tokens: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, specs: Iterable[str]) -> Optional[Credentials]:
        """From `basic:USER:PASSWORD` and `bearer:TOKEN` specs; None when there are none (no auth)."""
        users, tokens = {}, set()
        for spec in specs:
            scheme, _, rest = spec.partition(":")
            if scheme == "basic" and ":" in rest and rest.split(":", 1)[0] and rest.split(":", 1)[1]:
                user, password = rest.split(":", 1)
                users[user] = password
            elif scheme == "bearer" and rest:
                tokens.add(rest)
            else:
                shown = f"{scheme}:***" if rest else spec  # never echo a password or token
                raise InvalidConfig(
                    "auth", shown, "use basic:USER:PASSWORD or bearer:TOKEN (give --auth once per credential)"
                )
        return cls(users, frozenset(tokens)) if users or tokens else None

    def user_of(self, header: str) -> Optional[str]:
        """The user the `authorization` header authenticates, or None."""
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "bearer":
            return BEARER_USER if value in self.tokens else None
        if scheme.lower() == "basic":
            try:
                user, _, password = base64.b64decode(value, validate=True).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return None
            return user if user in self.users and self.users[user] == password else None
        return None


class RequireAuth(grpc.aio.ServerInterceptor):
    """Refuses unauthenticated calls; serves the others with `current_user()` set (a grpc.aio interceptor)."""

    def __init__(self, credentials: Credentials):
        self._credentials = credentials

    async def intercept_service(self, continuation: Callable[..., Any], details: grpc.HandlerCallDetails) -> Any:
        handler = await continuation(details)
        if handler is None or details.method.startswith(_UNCHECKED_SERVICES):
            return handler
        header = dict(details.invocation_metadata or ()).get("authorization", "")
        user = self._credentials.user_of(header)
        return _as_user(handler, user)


def _as_user(handler: grpc.RpcMethodHandler, user: Optional[str]) -> grpc.RpcMethodHandler:
    """`handler` run as `user`, or refusing with UNAUTHENTICATED when there is none.

    The wrapper keeps the behaviour's kind (plain, generator, coroutine, async generator): the aio
    server runs plain ones on its worker threads and awaits the others.
    """

    def wrap(behaviour: Callable[..., Any]) -> Callable[..., Any]:
        def serve(request: Any, context: Any) -> Any:
            if user is None:
                context.abort(grpc.StatusCode.UNAUTHENTICATED, UNAUTHENTICATED_MESSAGE)
            token = _user.set(user)
            try:
                return behaviour(request, context)
            finally:
                _user.reset(token)

        return serve

    def wrap_stream(behaviour: Callable[..., Any]) -> Callable[..., Any]:
        def serve(request: Any, context: Any) -> Any:
            if user is None:
                context.abort(grpc.StatusCode.UNAUTHENTICATED, UNAUTHENTICATED_MESSAGE)
            token = _user.set(user)
            try:
                yield from behaviour(request, context)
            finally:
                _user.reset(token)

        return serve

    def wrap_async(behaviour: Callable[..., Any]) -> Callable[..., Any]:
        async def serve(request: Any, context: Any) -> Any:
            if user is None:
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, UNAUTHENTICATED_MESSAGE)
            token = _user.set(user)
            try:
                return await behaviour(request, context)
            finally:
                _user.reset(token)

        return serve

    def wrap_async_stream(behaviour: Callable[..., Any]) -> Callable[..., Any]:
        async def serve(request: Any, context: Any) -> Any:
            if user is None:
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, UNAUTHENTICATED_MESSAGE)
            _user.set(user)  # this coroutine's own context: nothing to reset
            async for message in behaviour(request, context):
                yield message

        return serve

    def wrapped(behaviour: Callable[..., Any], streams: bool) -> Callable[..., Any]:
        if inspect.isasyncgenfunction(behaviour):
            return wrap_async_stream(behaviour)
        if inspect.iscoroutinefunction(behaviour):
            return wrap_async(behaviour)
        return wrap_stream(behaviour) if streams else wrap(behaviour)

    codec = {"request_deserializer": handler.request_deserializer, "response_serializer": handler.response_serializer}
    if handler.unary_unary:
        return grpc.unary_unary_rpc_method_handler(wrapped(handler.unary_unary, False), **codec)
    if handler.unary_stream:
        return grpc.unary_stream_rpc_method_handler(wrapped(handler.unary_stream, True), **codec)
    if handler.stream_unary:
        return grpc.stream_unary_rpc_method_handler(wrapped(handler.stream_unary, False), **codec)
    return grpc.stream_stream_rpc_method_handler(wrapped(handler.stream_stream, True), **codec)
