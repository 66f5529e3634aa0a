"""A task's pod without anything around it: the floor of the local trivial-task benchmark.

`LaunchRecorder` stands between the embedded server and its pod runner and keeps the last pod the
server launched; `run_alone` gives that same pod (its a0 command, environment and secrets) to the
same pod runner again, under a job id of its own, and times it to its end: no Armada, no connector,
no Flyte client.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from typing import Optional

from armada_flyte.pod_runner.model import ContainerEnd, PodLaunch, PodRunner


class LaunchRecorder:
    """A pod runner that passes every pod to `runner` and keeps the last one."""

    def __init__(self, runner: PodRunner) -> None:
        self.runner = runner
        self.last: Optional[PodLaunch] = None

    def launch(self, pod: PodLaunch, reporter) -> None:
        self.last = pod
        self.runner.launch(pod, reporter)

    def kill(self, run_id: str, grace_seconds: float) -> None:
        self.runner.kill(run_id, grace_seconds)

    def shutdown(self) -> None:
        self.runner.shutdown()


class _EndWatcher:
    """The reporter side for one pod run alone: it only waits for the end."""

    def __init__(self) -> None:
        self.ended = threading.Event()
        self.exit_code: Optional[int] = None
        self.error = ""

    def pending(self, run_id: str) -> bool:
        return True

    def running(self, run_id: str) -> bool:
        return True

    def finished(
        self, run_id: str, exit_code: int, error: str, containers: tuple[ContainerEnd, ...] = (), reason: str = ""
    ) -> None:
        self.exit_code, self.error = exit_code, error
        self.ended.set()

    def note(self, run_id: str, text: str) -> None:
        pass


def run_alone(runner: PodRunner, pod: PodLaunch, timeout: float = 120) -> float:
    """Seconds `runner` takes to run `pod` again, from launch to its end; raises if it fails."""
    name = f"alone-{uuid.uuid4().hex[:12]}"
    watcher = _EndWatcher()
    began = time.perf_counter()
    runner.launch(dataclasses.replace(pod, run_id=name, job_id=name, pod_name=name), watcher)
    if not watcher.ended.wait(timeout):
        raise RuntimeError(f"the pod run alone ({name}) did not end within {timeout} s")
    elapsed = time.perf_counter() - began
    if watcher.exit_code != 0:
        raise RuntimeError(f"the pod run alone ({name}) exited {watcher.exit_code}: {watcher.error}")
    return elapsed
