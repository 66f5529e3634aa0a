"""Where `armada-flyte dev` takes the credentials it requires, and the Host names its HTTP parts answer to.

A file (`--auth-file`, kept private: refused when others may read or change it) or the environment
(`ARMADA_FLYTE_DEV_AUTH`, which only the user and root can read in /proc/PID/environ) keep credentials
out of sight; `--auth` still works, but every local user can read a command line (/proc/PID/cmdline,
`ps`), so it warns. Every source adds to the others. No credential is ever printed.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import stat
import sys
from typing import Mapping, Optional

from armada_flyte.errors import InvalidConfig
from armada_flyte.server_credentials import Credentials

ENVIRONMENT = "ARMADA_FLYTE_DEV_AUTH"
"""Credentials separated by spaces or newlines, as `--auth` takes them."""
ARGUMENT_WARNING = (
    "warning: --auth puts credentials on the command line, where every local user can read them "
    f"(ps, /proc/PID/cmdline); give them in a file only you can read (--auth-file FILE) or in {ENVIRONMENT}"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--auth",
        action="append",
        default=[],
        metavar="basic:USER:PASSWORD|bearer:TOKEN",
        help="require these credentials on every call, as Armada does, and on the view, the Kubernetes API and "
        "the ingress (repeat for more; default: no auth). Every local user can read a command line: prefer "
        f"--auth-file or {ENVIRONMENT}",
    )
    parser.add_argument(
        "--auth-file",
        type=pathlib.Path,
        metavar="FILE",
        help="the same credentials from a file, one per line (# comments); it must be readable by you only "
        f"(chmod 600). {ENVIRONMENT} may hold them too, separated by spaces",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name the view, the Kubernetes API and the blob store answer to besides 127.0.0.1 and "
        "localhost (others are refused, against DNS rebinding); repeatable",
    )


def credential_specs(args: argparse.Namespace, environ: Mapping[str, str]) -> tuple[tuple[str, ...], list[str]]:
    """Every credential spec from `--auth`, `--auth-file` and the environment, each checked, and the sources
    they came from (for the banner). Warns on stderr when `--auth` was used."""
    specs: list[str] = []
    sources: list[str] = []
    if args.auth:
        print(ARGUMENT_WARNING, file=sys.stderr, flush=True)
        Credentials.parse(args.auth)
        specs += args.auth
        sources.append("--auth")
    if args.auth_file is not None:
        specs += read_auth_file(args.auth_file)
        sources.append(f"--auth-file {args.auth_file}")
    from_environment = environ.get(ENVIRONMENT, "").split()
    if from_environment:
        _parse(from_environment, ENVIRONMENT)
        specs += from_environment
        sources.append(ENVIRONMENT)
    return tuple(specs), sources


def read_auth_file(path: pathlib.Path) -> list[str]:
    """The credential lines of a file only its owner may read or change."""
    try:
        mode = path.stat().st_mode
        text = path.read_text()
    except OSError as exc:
        raise InvalidConfig("--auth-file", str(path), f"can't read it ({exc.strerror})") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise InvalidConfig(
            "--auth-file",
            str(path),
            f"others may read or change it (mode {stat.filemode(mode)}): make it yours alone with chmod 600 {path}",
        )
    specs = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if line and not line.startswith("#"):
            _parse([line], f"--auth-file {path}, line {number}")
            specs.append(line)
    if not specs:
        raise InvalidConfig("--auth-file", str(path), "it holds no credential: add basic:USER:PASSWORD or bearer:TOKEN")
    return specs


def _parse(specs: list[str], where: str) -> Optional[Credentials]:
    """The specs parsed, a bad one named by where it came from (never by its secret)."""
    try:
        return Credentials.parse(specs)
    except InvalidConfig as bad:
        raise InvalidConfig(where, bad.value, bad.fix) from None


def forget_environment() -> None:
    """Take the credentials out of this process's environment, so nothing it starts inherits them."""
    os.environ.pop(ENVIRONMENT, None)
