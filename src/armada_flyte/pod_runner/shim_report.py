"""What the container shim reports of a container's end, and how a kubelet would report that end."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable

from armada_flyte.pod_runner.model import ContainerEnd


@dataclass(frozen=True)
class ContainerLimits:
    """The limits a container runs under, as its end names them when it reaches one."""

    memory: int = 0
    """Bytes (0: none)."""
    pids: int = 0
    """Processes and threads of its pod."""
    file_size: int = 0
    """Bytes of one file (RLIMIT_FSIZE)."""


@dataclass(frozen=True)
class ShimReport:
    code: int
    reason: str
    most_seen: int
    """The most memory the container was seen using (bytes; reported when it was OOMKilled)."""
    reaped: bool
    """The shim saw every process of the container gone."""


def read_shim_report(status: int, shim_code: int) -> ShimReport:
    """What the shim wrote to the status pipe `status` ("<code> <reason> <most seen> reaped|left"), or (when it
    was killed) its own exit; closes the pipe."""
    try:
        report = os.read(status, 64).decode().split()
    except OSError:
        report = []
    finally:
        os.close(status)
    if len(report) == 4 and report[0].lstrip("-").isdigit() and report[2].isdigit():
        return ShimReport(int(report[0]), report[1], int(report[2]), report[3] == "reaped")
    code = shim_code if shim_code >= 0 else 128 - shim_code
    return ShimReport(code, "Completed" if code == 0 else "Error", 0, False)


def container_end(name: str, report: ShimReport, limits: ContainerLimits, stderr: Iterable[str]) -> ContainerEnd:
    """How the container ended, as a kubelet reports it (the shim's PidsLimit and FileSizeLimit read Error,
    with the limit in the message: Kubernetes has no reason of its own for either)."""
    code, reason, most_seen = report.code, report.reason, report.most_seen
    if reason == "OOMKilled":
        message = (
            f"the container's processes went over its memory limit ({limits.memory} bytes, "
            "counting its files in /dev/shm and Memory emptyDirs)"
        )
        if most_seen:
            message += f"; the most it was seen using: {most_seen} bytes"
    elif reason == "PidsLimit":
        reason, message = (
            "Error",
            (
                f"the pod reached its limit of {limits.pids} processes and threads (the cluster file's podPidsLimit), "
                "where its forks fail, and the container was stopped"
            ),
        )
    elif reason == "FileSizeLimit":
        reason, message = (
            "Error",
            (
                f"a process of the container wrote past its file-size limit of {limits.file_size} bytes (RLIMIT_FSIZE: "
                "the cluster file's podFileSizeLimit, or the container's ephemeral-storage if less)"
            ),
        )
    elif code != 0:
        message = "\n".join(stderr) or f"container {name} exited with code {code}"
    else:
        message = ""
    return ContainerEnd(name, code, reason, message)
