"""The `authorization` header values Armada accepts, and secrets read from files.

Armada's servers read `basic <base64 user:password>` or `Bearer <token>` from the gRPC metadata
(`internal/common/auth/basic.go`). The connector, the executor and the admin tools all build the
same values; a password or token is best kept in a file (a mounted Secret, a bed's 0600 file), not
in a command line that every local user can read in /proc.
"""

from __future__ import annotations

import base64
import pathlib

from armada_flyte.errors import InvalidConfig

MAX_SECRET_FILE_BYTES = 64 * 1024
"""A password or token file larger than this is not one (a wrong path, say): refused, never read whole."""


def basic_header(username: str, password: str) -> str:
    """`basic <base64 user:password>`, as Armada's basic auth reads it."""
    return "basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def bearer_header(token: str) -> str:
    return f"Bearer {token}"


def read_secret_file(path: str | pathlib.Path, setting: str) -> str:
    """The secret in `path` without its trailing line break; a typed error naming `setting`, never the content."""
    path = pathlib.Path(path)
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_SECRET_FILE_BYTES + 1)
    except OSError as exc:
        raise InvalidConfig(
            setting, str(path), f"the file cannot be read ({exc.strerror or type(exc).__name__})"
        ) from None
    if len(data) > MAX_SECRET_FILE_BYTES:
        raise InvalidConfig(
            setting, str(path), f"a secret file holds one line; this one is over {MAX_SECRET_FILE_BYTES} bytes"
        )
    try:
        text = data.decode().strip("\r\n")
    except UnicodeDecodeError:
        raise InvalidConfig(setting, str(path), "the file is not UTF-8 text") from None
    if not text or "\n" in text:
        raise InvalidConfig(setting, str(path), "write the secret on one line, alone in the file")
    return text
