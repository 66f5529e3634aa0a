"""Armada's own tools (armadactl, testsuite) and test files at the pinned version, and an
`armada-flyte dev` for them to talk to."""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import socket
import subprocess
import sys
from typing import Iterator, Mapping

import pytest

from support.process_output import Output
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


def run_testsuite_runner(args: list[str], env: Mapping[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """scripts/armada-testsuite.sh `args`, in a process group of its own that is ended whatever happens
    (a timeout included), so an interrupted run leaves no server or pod behind."""
    runner = subprocess.Popen(
        [str(ROOT / "scripts" / "armada-testsuite.sh"), *args],
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = runner.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _end_group(runner)
        _, stderr = runner.communicate(timeout=30)
        raise AssertionError(f"armada-testsuite.sh {' '.join(args)} ran past {timeout} s: {stderr[-3000:]}") from None
    finally:
        _end_group(runner)
    return subprocess.CompletedProcess(runner.args, runner.returncode, stdout, stderr)


def _end_group(runner: subprocess.Popen) -> None:
    """Stop the runner's process group: politely (its trap stops the server), then whatever is left, for good."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(runner.pid, signum)
        except ProcessLookupError:
            return  # nothing of the group is left
        with contextlib.suppress(subprocess.TimeoutExpired):
            runner.wait(timeout=15)


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
        yield Output(process).wait_for(r"listening on (\S+)").group(1)
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
