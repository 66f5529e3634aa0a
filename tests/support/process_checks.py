"""Looking at the host's processes from a test: is a pid still running (zombies count as gone)?"""

from __future__ import annotations

from armada_flyte.pod_runner.process_tree import is_alive

__all__ = ["is_alive", "pids_in_log"]


def pids_in_log(lines: list[str], prefix: str) -> list[int]:
    """Pids a pod printed as `<prefix> <pid>` lines."""
    return [int(line.split()[1]) for line in lines if line.startswith(prefix + " ")]
