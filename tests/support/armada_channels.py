"""Channels of the tests' own Armada clients, with the credentials the connector would use.

A real-Armada bed takes basic auth only (scripts/real-armada.sh up prints ARMADA_FLYTE_AUTH_USERNAME
and ARMADA_FLYTE_AUTH_PASSWORD_FILE). With those two in the environment, the connector authenticates
by itself (they are its settings); `armada_channel` gives the tests' own armada_client calls the same
identity. The embedded server without `--auth` ignores the header, so the same test runs on both.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Iterator, Mapping, Optional

import grpc
import pytest

from armada_flyte.authorization import basic_header, read_secret_file

USERNAME_VARIABLE = "ARMADA_FLYTE_AUTH_USERNAME"
PASSWORD_FILE_VARIABLE = "ARMADA_FLYTE_AUTH_PASSWORD_FILE"


def bed_authorization(environ: Mapping[str, str] = os.environ) -> str:
    """The `authorization` value of the credentials in `environ` ("" when there are none)."""
    username, password_file = environ.get(USERNAME_VARIABLE), environ.get(PASSWORD_FILE_VARIABLE)
    if not username or not password_file:
        return ""
    return basic_header(username, read_secret_file(password_file, PASSWORD_FILE_VARIABLE))


def bed_credentials(bed: Mapping[str, str]) -> dict[str, str]:
    """The credential variables among a bed's assignments (as `up` prints them), for an environment."""
    return {name: bed[name] for name in (USERNAME_VARIABLE, PASSWORD_FILE_VARIABLE) if bed.get(name)}


@contextlib.contextmanager
def logged_in_to(bed: Mapping[str, str]) -> Iterator[None]:
    """The environment's credentials are `bed`'s while the block runs (a bed a test starts for itself has
    a password of its own; the session's bed's come back after)."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in bed_credentials(bed).items():
            patch.setenv(name, value)
        yield


def armada_channel(url: str, authorization: Optional[str] = None) -> grpc.Channel:
    """A plaintext channel to the Armada at `url` whose calls carry `authorization` (default: the
    environment's credentials, `bed_authorization`)."""
    header = bed_authorization() if authorization is None else authorization
    channel = grpc.insecure_channel(url)
    return grpc.intercept_channel(channel, _WithAuthorization(header)) if header else channel


class _WithAuthorization(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    """Adds the `authorization` metadata to every call that does not carry one of its own."""

    def __init__(self, header: str):
        self._header = header

    def _details(self, details: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        metadata = list(details.metadata or ())
        if not any(name == "authorization" for name, _ in metadata):
            metadata.append(("authorization", self._header))
        return _CallDetails(
            details.method, details.timeout, metadata, details.credentials, details.wait_for_ready, details.compression
        )

    def intercept_unary_unary(self, continuation: Callable, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation: Callable, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation: Callable, details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)

    def intercept_stream_stream(self, continuation: Callable, details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)


class _CallDetails(grpc.ClientCallDetails):
    def __init__(self, method, timeout, metadata, credentials, wait_for_ready, compression):  # noqa: ANN001
        self.method, self.timeout, self.metadata = method, timeout, metadata
        self.credentials, self.wait_for_ready, self.compression = credentials, wait_for_ready, compression
