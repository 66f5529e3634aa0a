"""The credentials a server of ours accepts (`basic:USER:PASSWORD`, `bearer:TOKEN`), and how a header is checked.

One set serves every part `armada-flyte dev --auth` protects: the embedded gRPC API (as Armada checks the
`authorization` header: internal/common/auth/multi.go, basic.go; the scheme matched case-insensitively),
the local view, the read-only Kubernetes API and the ingress controller. Secrets are compared in constant
time and never shown in a repr, a log or an error.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional

from armada_flyte.errors import InvalidConfig

BEARER_USER = "bearer"
"""The user a valid bearer token authenticates as."""


@dataclass(frozen=True)
class ClientCredential:
    """One credential as a client presents it: a bearer token, or a basic user and password."""

    token: str = field(default="", repr=False)
    user: str = ""
    password: str = field(default="", repr=False)


@dataclass(frozen=True)
class Credentials:
    """Accepted users (name -> password) and bearer tokens."""

    users: Mapping[str, str] = field(default_factory=dict, repr=False)
    tokens: frozenset[str] = field(default=frozenset(), repr=False)

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

    def with_token(self, token: str) -> Credentials:
        """These credentials and one more bearer token."""
        return Credentials(self.users, self.tokens | {token})

    def one(self) -> ClientCredential:
        """One accepted credential, for a client of ours (the view's reader, a kubeconfig): a token if any."""
        if self.tokens:
            return ClientCredential(token=sorted(self.tokens)[0])
        user, password = sorted(self.users.items())[0]
        return ClientCredential(user=user, password=password)

    def user_of(self, header: str, *, token_as_password: bool = False) -> Optional[str]:
        """The user the `authorization` header authenticates, or None.

        `token_as_password`: a basic header whose password is a bearer token authenticates too, so a
        browser's login prompt (user and password only) can present a token."""
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "bearer":
            return BEARER_USER if _one_of(value, self.tokens) else None
        if scheme.lower() != "basic":
            return None
        try:
            user, _, password = base64.b64decode(value, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        if user in self.users and _same(password, self.users[user]):
            return user
        if token_as_password and _one_of(password, self.tokens):
            return BEARER_USER
        return None


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


def _one_of(given: str, accepted: Iterable[str]) -> bool:
    """Whether `given` is one of `accepted`, comparing each in constant time (no early exit)."""
    found = False
    for candidate in accepted:
        found |= _same(given, candidate)
    return found
