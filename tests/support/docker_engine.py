"""A Docker engine of the tests' own: Debian's `dockerd` on a private socket, started and stopped with the session.

No bridge and no iptables: the only network here is 127.0.0.1, so containers use the host's.
Its socket, data root and exec root live in one temporary folder (short paths: containerd's
socket lives under the exec root and unix sockets allow about 100 bytes), removed at stop.
"""

from __future__ import annotations

import ctypes
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Iterable

START_DEADLINE_SECONDS = 60.0
_MNT_DETACH = 2


class EngineUnavailable(RuntimeError):
    """No Docker engine could be started here; the message says what is missing."""


class DockerEngine:
    """One running `dockerd` (with the containerd it starts), in a process group of its own."""

    def __init__(self, folder: pathlib.Path, process: subprocess.Popen):
        self.folder = folder
        self.process = process

    @property
    def base_url(self) -> str:
        """What DOCKER_HOST (or `base_url` of the Docker SDK) must say to reach this engine."""
        return f"unix://{self.folder / 'docker.sock'}"

    @classmethod
    def start(cls, insecure_registries: Iterable[str] = ()) -> DockerEngine:
        """Start dockerd and wait until it answers; EngineUnavailable (with its log's tail) if it can't."""
        program = shutil.which("dockerd")
        if program is None:
            raise EngineUnavailable("no Docker engine: install Debian's docker.io (it provides dockerd)")
        try:
            import docker
        except ModuleNotFoundError:
            raise EngineUnavailable("the Docker SDK is not installed (pip install docker)") from None
        folder = pathlib.Path(tempfile.mkdtemp(prefix="af-dockerd-"))
        (folder / "daemon.json").write_text("{}")
        argv = [
            program,
            "--config-file",
            str(folder / "daemon.json"),
            "--host",
            f"unix://{folder / 'docker.sock'}",
            "--data-root",
            str(folder / "data"),
            "--exec-root",
            str(folder / "exec"),
            "--pidfile",
            str(folder / "docker.pid"),
            "--bridge=none",
            "--iptables=false",
            "--ip6tables=false",
        ]
        for host in insecure_registries:
            argv += ["--insecure-registry", host]
        with open(folder / "dockerd.log", "wb") as log:
            process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        engine = cls(folder, process)

        def answers() -> bool:
            try:
                return docker.APIClient(base_url=engine.base_url, version="auto").ping()
            except docker.errors.DockerException:
                return False

        give_up = time.monotonic() + START_DEADLINE_SECONDS
        while process.poll() is None and not answers() and time.monotonic() < give_up:
            time.sleep(0.2)
        if process.poll() is not None or not answers():
            tail = (folder / "dockerd.log").read_text(errors="replace").splitlines()[-25:]
            engine.stop()
            raise EngineUnavailable("dockerd did not start here:\n" + "\n".join(tail))
        return engine

    def stop(self) -> None:
        """Stop dockerd and the containerd it started (the process group), then remove the folder."""
        group = self.process.pid
        _signal_group(group, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
            give_up = time.monotonic() + 10
            while _signal_group(group, 0):
                if time.monotonic() > give_up:
                    raise TimeoutError("containerd did not exit after dockerd")
                time.sleep(0.2)
        except (subprocess.TimeoutExpired, TimeoutError):
            _signal_group(group, signal.SIGKILL)
            self.process.wait(timeout=10)
        _unmount_under(self.folder)
        shutil.rmtree(self.folder, ignore_errors=True)


def _unmount_under(folder: pathlib.Path) -> None:
    """Detach what dockerd left mounted in its folder (its default network namespace stays bind-mounted)."""
    libc = ctypes.CDLL(None, use_errno=True)
    mounts = pathlib.Path("/proc/self/mountinfo").read_text().splitlines()
    points = [line.split()[4].encode().decode("unicode_escape") for line in mounts]
    for point in sorted((p for p in points if p.startswith(f"{folder}/")), key=len, reverse=True):
        libc.umount2(point.encode(), _MNT_DETACH)


def _signal_group(group: int, signal_number: int) -> bool:
    """Send a signal to the group; False when no process is left in it."""
    try:
        os.killpg(group, signal_number)
        return True
    except ProcessLookupError:
        return False
