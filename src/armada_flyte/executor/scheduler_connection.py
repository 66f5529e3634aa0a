"""How the executor reaches the scheduler's executor API: TLS or plaintext, and the credentials it shows.

Armada's scheduler checks the executor API's calls with the same auth as the public API (basic or
bearer in the `authorization` metadata; `execute_jobs` permission). Anyone whose lease is accepted
runs code on this machine, so credentials and the transport are chosen together: plaintext is for a
scheduler on this machine, or for one the admin says is on a private network (`insecure`).
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass, field
from typing import Optional

from armada_flyte.addresses import is_loopback
from armada_flyte.authorization import basic_header, bearer_header, read_secret_file
from armada_flyte.errors import InvalidConfig


@dataclass(frozen=True)
class SchedulerConnection:
    """The executor API's address, transport and the `authorization` header value ("" for none)."""

    target: str
    tls: bool = False
    ca_cert: Optional[pathlib.Path] = None
    authorization: str = field(default="", repr=False)

    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", self.authorization),) if self.authorization else ()


def scheduler_connection(
    target: str,
    *,
    tls: bool = False,
    ca_cert: Optional[str] = None,
    username: Optional[str] = None,
    password_file: Optional[str] = None,
    token_file: Optional[str] = None,
    insecure: bool = False,
) -> SchedulerConnection:
    """The connection the executor command's options describe; `InvalidConfig` naming the option otherwise."""
    if ca_cert is not None and not tls:
        raise InvalidConfig("--ca-cert", ca_cert, "a CA bundle is for TLS: add --tls")
    if (username is None) != (password_file is None):
        raise InvalidConfig(
            "--auth-username" if username is None else "--auth-password-file",
            None,
            "basic auth needs both --auth-username and --auth-password-file",
        )
    if username is not None and token_file is not None:
        raise InvalidConfig("--auth-token-file", token_file, "use one way to authenticate: a password or a token")
    if not tls and not insecure and not is_loopback(target):
        raise InvalidConfig(
            "--scheduler",
            target,
            "a scheduler on another machine is reached over TLS (--tls, with --ca-cert for a private CA); "
            "plaintext would let anyone on the path take the executor's leases and credentials. On a private "
            "network you trust, say so with --insecure",
        )
    authorization = ""
    if username is not None and password_file is not None:
        authorization = basic_header(username, read_secret_file(password_file, "--auth-password-file"))
    elif token_file is not None:
        authorization = bearer_header(read_secret_file(token_file, "--auth-token-file"))
    return SchedulerConnection(target, tls, pathlib.Path(ca_cert) if ca_cert else None, authorization)
