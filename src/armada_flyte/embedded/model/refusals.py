"""Refusals the API returns, each carrying the gRPC status code Armada uses for that case."""

from __future__ import annotations

import functools
import inspect
import json
from typing import Any, Callable, TypeVar

import grpc

F = TypeVar("F", bound=Callable[..., Any])


class Refusal(Exception):
    """A request the server refuses; `code` is the status the client sees, the message its details."""

    code = grpc.StatusCode.UNKNOWN


class PermissionDenied(Refusal):
    code = grpc.StatusCode.PERMISSION_DENIED


class InvalidArgument(Refusal):
    code = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(Refusal):
    code = grpc.StatusCode.NOT_FOUND


class QueueNotFound(PermissionDenied):
    """Armada authorises against the queue first, so an unknown queue reads as a permission failure."""

    def __init__(self, queue: str):
        super().__init__(f'could not find queue "{queue}"')


def as_status(method: F) -> F:
    """Turn a `Refusal` raised by a unary servicer method (plain or coroutine) into its gRPC status."""
    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def on_loop(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
            try:
                return await method(self, request, context)
            except Refusal as refusal:
                await context.abort(refusal.code, str(refusal))

        return on_loop  # type: ignore[return-value]

    @functools.wraps(method)
    def wrapper(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(self, request, context)
        except Refusal as refusal:
            context.abort(refusal.code, str(refusal))

    return wrapper  # type: ignore[return-value]


class UnknownQueue(Refusal):
    """Cancel, preempt and reprioritize return the queue cache's error unwrapped, so gRPC says UNKNOWN
    (`authorize` in internal/server/submit/submit.go; the text is `ErrQueueNotFound`'s)."""

    def __init__(self, queue: str):
        super().__init__(f'could not find queue "{queue}"')


def invalid_field(name: str, value: str, message: str) -> InvalidArgument:
    """Armada's `ErrInvalidArgument` wording (internal/common/armadaerrors/errors.go)."""
    return InvalidArgument(f"value {json.dumps(value)} is invalid for field {json.dumps(name)}: {message}")
