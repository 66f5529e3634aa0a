"""Real Armada on 127.0.0.1 (scripts/real-armada.sh) with our executor (`armada-flyte executor`) leasing from it.

A bed already up in this shell (`eval "$(scripts/real-armada.sh up --no-executor)"`) is used as
it is; otherwise one is started with `up --no-executor` and stopped after. The scheduler can be
restarted from its pid file, as a crash and restart would do.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Iterator

from support.armada_channels import PASSWORD_FILE_VARIABLE, USERNAME_VARIABLE, bed_authorization
from support.process_checks import is_alive
from support.real_armada import bed_of_its_own
from support.real_parts import missing_part

ROOT = pathlib.Path(__file__).resolve().parents[2]
BED_SCRIPT = ROOT / "scripts" / "real-armada.sh"
CLI = pathlib.Path(sys.executable).parent / "armada-flyte"
_BED_ENV = ("ARMADA_URL", "ARMADA_EXECUTOR_API", "REAL_ARMADA_LOGS", "REAL_ARMADA_STATE")
_CREDENTIALS_ENV = (USERNAME_VARIABLE, PASSWORD_FILE_VARIABLE)


@dataclass(frozen=True)
class Bed:
    armada_url: str
    executor_api: str
    logs: pathlib.Path
    state: pathlib.Path
    credentials: dict[str, str]
    """The bed's user and password file, as `up` prints them (ARMADA_FLYTE_AUTH_*)."""

    def authorization(self) -> str:
        return bed_authorization(self.credentials)

    def log_tail(self, component: str, lines: int = 40) -> str:
        return tail(self.logs / f"{component}.log", lines)


def tail(path: pathlib.Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()[-lines:]
    except OSError as exc:
        return f"--- {path}: {exc}\n"
    return f"--- last lines of {path}:\n" + "\n".join(text) + "\n"


@contextlib.contextmanager
def real_armada_bed() -> Iterator[Bed]:
    if all(os.environ.get(name) for name in _BED_ENV):
        values = {name: os.environ[name] for name in (*_BED_ENV, *_CREDENTIALS_ENV) if os.environ.get(name)}
        yield _bed(values)
        return
    if not BED_SCRIPT.is_file():
        missing_part(f"no {BED_SCRIPT.relative_to(ROOT)} and no bed in this shell ({', '.join(_BED_ENV)})")
    with bed_of_its_own("--no-executor") as values:
        yield _bed(values)


def _bed(values: dict[str, str]) -> Bed:
    return Bed(
        values["ARMADA_URL"],
        values["ARMADA_EXECUTOR_API"],
        pathlib.Path(values["REAL_ARMADA_LOGS"]),
        pathlib.Path(values["REAL_ARMADA_STATE"]),
        {name: values[name] for name in _CREDENTIALS_ENV if name in values},
    )


class OurExecutor:
    """`armada-flyte executor` leasing from the bed, in a process group of its own, logging to `log`
    (appended to across restarts); pod logs go to `folder`/pods."""

    def __init__(self, bed: Bed, folder: pathlib.Path):
        self.bed = bed
        self.folder = folder
        self.log = folder / "executor.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        command = [str(CLI), "executor", "--scheduler", self.bed.executor_api, "--lease-interval", "0.5"]
        if self.bed.credentials:
            command += ["--auth-username", self.bed.credentials[USERNAME_VARIABLE]]
            command += ["--auth-password-file", self.bed.credentials[PASSWORD_FILE_VARIABLE]]
        with self.log.open("a") as out:
            self.process = subprocess.Popen(
                [*command, "--pod-logs", str(self.folder / "pods")],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def stop(self) -> None:
        """SIGTERM, as a user's Ctrl-C or a service manager stops it; SIGKILL if it takes over 30 s."""
        if self.process is not None:
            end_group(self.process, 30)
            self.process = None


@contextlib.contextmanager
def our_executor(bed: Bed, folder: pathlib.Path) -> Iterator[OurExecutor]:
    executor = OurExecutor(bed, folder)
    executor.start()
    try:
        yield executor
    finally:
        executor.stop()


def end_group(process: subprocess.Popen, grace_seconds: float) -> None:
    """SIGTERM the process's group, SIGKILL it after `grace_seconds` if it is still there."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def stop_scheduler(bed: Bed) -> tuple[list[str], str]:
    """Kill the bed's scheduler (its whole group) as a crash would; what it takes to start it again."""
    return kill_component(bed.state, "scheduler", whole_group=True)


def start_scheduler(bed: Bed, argv: list[str], cwd: str) -> None:
    """Start the scheduler again as the bed did (its own session, output to its log, pid in its pid file)."""
    start_component(bed.state, bed.logs, "scheduler", argv, cwd)


def kill_component(state: pathlib.Path, name: str, whole_group: bool) -> tuple[list[str], str]:
    """SIGKILL a bed component found by its pid file under `state` (its process group too when `whole_group`),
    wait (bounded) for it to be gone, and return its command line and folder, to start it again."""
    pid = int((state / "pids" / f"{name}.pid").read_text())
    argv = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    cwd = os.readlink(f"/proc/{pid}/cwd")
    if whole_group:
        os.killpg(pid, signal.SIGKILL)
    else:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while is_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not is_alive(pid), f"the bed's {name} (pid {pid}) still runs 30 s after SIGKILL"
    return [a.decode() for a in argv], cwd


def start_component(state: pathlib.Path, logs: pathlib.Path, name: str, argv: list[str], cwd: str) -> int:
    """Start a bed component as the bed does (a session of its own, output appended to its log, pid in its
    pid file, so the bed's `down` stops it); its pid."""
    with (logs / f"{name}.log").open("a") as out:
        process = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    (state / "pids" / f"{name}.pid").write_text(f"{process.pid}\n")
    return process.pid
