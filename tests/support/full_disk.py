"""A disk that fills up under a running `armada-flyte dev`, and frees again, for the state store's tests.

Two kinds, two ways a write fails: a small tmpfs filled by a ballast file (ENOSPC, SQLite's
SQLITE_FULL; mounting needs root, as CI runs) and a file-size limit set on the server's process with
prlimit (EFBIG, SQLite's SQLITE_IOERR_WRITE; any user). Either fills at once: the state file can't
grow past its size, so the first write that needs more space fails.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pathlib
import resource
import shutil
import subprocess
import sys
import tempfile
from typing import Iterator, Optional, Protocol

import grpc
from armada_client.client import ArmadaClient

from support.pods import item, pod, python
from support.process_output import Output
from support.real_parts import missing_part

DEV = [sys.executable, "-m", "armada_flyte.admin.cli", "dev", "--port", "0", "--queue", "cli", "--no-blob-store"]
MOST_SUBMISSIONS = 200
"""A server that takes this many jobs on a full disk never refuses."""


class Disk(Protocol):
    folder: pathlib.Path
    """Where the server keeps its state (on this disk)."""

    def fill(self, pid: int) -> None: ...

    def free(self, pid: int) -> None: ...


class Tmpfs:
    """A 16 MiB tmpfs; `fill` writes a ballast file until the disk is full, `free` removes it."""

    def __init__(self, mount_point: pathlib.Path):
        self._mount_point = mount_point
        self.folder = mount_point / "state"
        self._ballast = mount_point / "ballast"

    def fill(self, pid: int) -> None:
        with self._ballast.open("wb") as ballast:
            try:
                while True:
                    ballast.write(b"\0" * 65536)
                    ballast.flush()
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc

    def free(self, pid: int) -> None:
        self._ballast.unlink()


class FileSizeLimit:
    """The server's own file-size limit (RLIMIT_FSIZE), lowered by `fill` to its largest state file's size
    and lifted by `free` (prlimit on another process of the same user needs no privilege)."""

    def __init__(self, folder: pathlib.Path):
        self.folder = folder / "state"

    def fill(self, pid: int) -> None:
        largest = max(path.stat().st_size for path in self.folder.iterdir() if path.is_file())
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (largest, resource.RLIM_INFINITY))

    def free(self, pid: int) -> None:
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def tmpfs() -> Iterator[Tmpfs]:
    """A mounted tmpfs, unmounted after; without root (or `mount`), a missing part."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        missing_part("a small tmpfs for the full-disk test: mounting one needs root and mount(8)")
    mount_point = pathlib.Path(tempfile.mkdtemp(prefix="armada-flyte-full-disk-"))
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount_point)], capture_output=True)
    if mounted.returncode != 0:
        mount_point.rmdir()
        missing_part(f"a small tmpfs for the full-disk test: mount failed: {mounted.stderr.decode().strip()}")
    try:
        yield Tmpfs(mount_point)
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=True)
        mount_point.rmdir()


class DevServer:
    """`armada-flyte dev` on a state folder, started and stopped by the test."""

    def __init__(self, state: pathlib.Path, view: bool = False):
        command = [*DEV, "--state-dir", str(state), *([] if view else ["--no-view"])]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.output = Output(self.process)
        self.url = self.output.wait_for(r"listening on (127\.0\.0\.1:\d+)").group(1)
        self.view_url = self.output.wait_for(r"^view: (http://127\.0\.0\.1:\d+/)$").group(1) if view else ""
        self.output.wait_for(r"Press Ctrl-C to stop")
        self.channel = grpc.insecure_channel(self.url)
        self.client = ArmadaClient(self.channel)

    def stop(self) -> int:
        """SIGTERM (a graceful stop); its exit code."""
        self.channel.close()
        self.process.terminate()
        return self.process.wait(timeout=60)

    def kill(self) -> None:
        self.channel.close()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def printing(text: str):
    """A request item whose pod prints `text` and ends."""
    return item(pod(python(f"print({text!r})")))


def try_submit(client: ArmadaClient, job_set: str, text: str) -> tuple[Optional[str], Optional[grpc.RpcError]]:
    """The new job's id, or the refusal."""
    try:
        return client.submit_jobs("cli", job_set, [printing(text)]).job_response_items[0].job_id, None
    except grpc.RpcError as refusal:
        return None, refusal


def submit_until_refused(client: ArmadaClient, job_set: str) -> tuple[list[str], grpc.RpcError]:
    """Submit one job at a time until the server refuses one: the jobs it acknowledged, and the refusal."""
    acknowledged = []
    for number in range(MOST_SUBMISSIONS):
        job_id, refusal = try_submit(client, job_set, f"job {number}")
        if refusal is not None:
            return acknowledged, refusal
        acknowledged.append(job_id)
    raise AssertionError(f"the server acknowledged {MOST_SUBMISSIONS} jobs on a full disk and refused none")


@contextlib.contextmanager
def refusing_server(tmp_path: pathlib.Path) -> Iterator[DevServer]:
    """A dev server whose state can't be written (its file-size limit lowered) and has refused a job."""
    disk = FileSizeLimit(tmp_path)
    server = DevServer(disk.folder)
    try:
        disk.fill(server.process.pid)
        submit_until_refused(server.client, "js")
        yield server
    finally:
        server.kill()
