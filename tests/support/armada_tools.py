"""Armada's own tools (armadactl, testsuite) and test files at the pinned version, and an
`armada-flyte dev` for them to talk to."""

from __future__ import annotations

import contextlib
import pathlib
import re
import socket
import subprocess
import sys
from typing import Iterator

import pytest

from support.real_parts import missing_part

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = pathlib.Path(sys.executable).parent / "armada-flyte"


@pytest.fixture(scope="session")
def armada_tools() -> dict[str, str]:
    """Armada's tools and cases at the pinned version (built here the first time, then cached)."""
    try:
        result = subprocess.run(
            [str(ROOT / "scripts" / "build-armada-tools.sh"), "--env"],
            capture_output=True,
            text=True,
            timeout=1800,
        )
    except FileNotFoundError as exc:
        missing_part(f"scripts/build-armada-tools.sh can't run: {exc}")
    if result.returncode != 0:
        missing_part(f"Armada's tools could not be built (needs Go and the Go module proxy): {result.stderr[-2000:]}")
    return dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)


@pytest.fixture(scope="module")
def dev_server() -> Iterator[str]:
    """`armada-flyte dev` on a free port, as a user starts it; yields host:port."""
    with running_dev_server(0) as url:
        yield url


@contextlib.contextmanager
def running_dev_server(port: int) -> Iterator[str]:
    """`armada-flyte dev --ephemeral --no-blob-store` on 127.0.0.1:`port` (0: any free one); yields host:port."""
    process = subprocess.Popen(
        [str(CLI), "dev", "--ephemeral", "--port", str(port), "--no-blob-store"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.search(r"listening on (\S+)", line)
        assert match, line + process.stdout.read()
        yield match.group(1)
    finally:
        process.terminate()
        process.wait(timeout=30)


def port_in_use(port: int) -> str:
    """Which of 127.0.0.1 and ::1 (both are `localhost`) already has something on `port`; "" when neither."""
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            probe = socket.socket(family, socket.SOCK_STREAM)
        except OSError:
            continue  # no IPv6 here
        with probe:
            try:
                probe.bind((host, port))
            except OSError as exc:
                if exc.errno == 99:  # EADDRNOTAVAIL: ::1 isn't configured
                    continue
                return f"{host}:{port}"
    return ""
