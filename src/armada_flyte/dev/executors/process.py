"""The process executor: each leased pod runs for real, as a local process in its own sandbox.

The first container's command and args run with the pod's env, in a session of its own so the
whole process tree can be ended. Its stdout and stderr become the job's log. Pods run on this
machine's CPU: when the pod's node group has another architecture, the log and job details
say so plainly.
"""

from __future__ import annotations

import logging
import os
import pathlib
import selectors
import shutil
import subprocess
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import IO, Optional

from armada_flyte.dev.executors import process_tree
from armada_flyte.dev.executors.base import PodLaunch, RunReporter, host_architecture
from armada_flyte.dev.executors.sandbox import DEFAULT_PRIVATE_PREFIXES, Sandbox
from armada_flyte.dev.logs import PodLog

log = logging.getLogger(__name__)

_DRAIN_AFTER_EXIT_SECONDS = 2.0
_SHUTDOWN_GRACE_SECONDS = 2.0


@dataclass
class _PodProcess:
    lock: threading.Lock = field(default_factory=threading.Lock)
    process: Optional[subprocess.Popen] = None
    killed: bool = False
    thread: Optional[threading.Thread] = None


class ProcessExecutor:
    """Runs pods as local processes under `sandbox_root/<job id>/` (a temporary folder by default)."""

    def __init__(
        self,
        sandbox_root: str | pathlib.Path | None = None,
        private_prefixes: tuple[str, ...] = DEFAULT_PRIVATE_PREFIXES,
        kept_sandboxes: int = 500,
    ):
        self._owns_root = sandbox_root is None
        self.sandbox_root = pathlib.Path(sandbox_root or tempfile.mkdtemp(prefix="armada-flyte-dev-")).resolve()
        self.sandbox_root.mkdir(parents=True, exist_ok=True)
        self.private_prefixes = private_prefixes
        self.host_architecture = host_architecture()
        self._pods: dict[str, _PodProcess] = {}
        self._lock = threading.Lock()
        # Finished pods' sandboxes stay for inspection, the newest `kept_sandboxes` of them, so a
        # long `armada-flyte dev` session doesn't fill the disk.
        self._finished: deque[str] = deque()
        self._kept_sandboxes = kept_sandboxes

    def sandbox_of(self, job_id: str) -> pathlib.Path:
        return self.sandbox_root / job_id

    def launch(self, pod: PodLaunch, reporter: RunReporter) -> None:
        with self._lock:
            state = self._pods.setdefault(pod.run_id, _PodProcess())
        state.thread = threading.Thread(target=self._run, args=(pod, reporter, state), name=pod.pod_name, daemon=True)
        try:
            state.thread.start()
        except BaseException:
            with self._lock:
                self._pods.pop(pod.run_id, None)
            raise

    def kill(self, run_id: str, grace_seconds: float) -> None:
        with self._lock:
            state = self._pods.get(run_id)
        if state is None:
            return  # never launched (the control plane won't start it now) or already over
        with state.lock:
            state.killed = True
            process = state.process
        if process is not None:
            threading.Thread(target=process_tree.terminate, args=(process.pid, grace_seconds, run_id), daemon=True).start()

    def shutdown(self) -> None:
        with self._lock:
            states = list(self._pods.items())
        for run_id, _ in states:
            self.kill(run_id, _SHUTDOWN_GRACE_SECONDS)
        for _, state in states:
            if state.thread is not None:
                state.thread.join(timeout=_SHUTDOWN_GRACE_SECONDS + 10)
        if self._owns_root:
            shutil.rmtree(self.sandbox_root, ignore_errors=True)

    def _run(self, pod: PodLaunch, reporter: RunReporter, state: _PodProcess) -> None:
        try:
            exit_code, error = self._run_pod(pod, reporter, state)
        except Exception as exc:  # a bug here must still end the run, or its job would hold its node forever
            log.exception("running pod %s failed", pod.pod_name)
            exit_code, error = 128, f"the process executor failed to run the pod: {exc}"
        try:
            reporter.finished(pod.run_id, exit_code, error)
        finally:
            with self._lock:
                self._pods.pop(pod.run_id, None)
                self._finished.append(pod.job_id)
                expired = [self._finished.popleft() for _ in range(max(0, len(self._finished) - self._kept_sandboxes))]
            for job_id in expired:
                shutil.rmtree(self.sandbox_of(job_id), ignore_errors=True)

    def _run_pod(self, pod: PodLaunch, reporter: RunReporter, state: _PodProcess) -> tuple[int, str]:
        if not reporter.pending(pod.run_id):
            return 137, "the pod was stopped before it started"
        container = pod.container
        if not container.command and not container.args:
            error = (
                f"container {container.name} has no command or args: the process executor cannot run the image's "
                "own entrypoint; give the command in the pod spec, or use the docker executor"
            )
            pod.log.write("stderr", error)
            return 128, error
        if pod.architecture != self.host_architecture:
            reporter.note(
                pod.run_id,
                f"node group {pod.node_group} is {pod.architecture} but this host is {self.host_architecture}: "
                f"the process executor ran this pod natively on {self.host_architecture}, not on {pod.architecture}. "
                f"To run it on {pod.architecture}, use the docker executor with QEMU binfmt installed.",
            )
        try:
            sandbox = Sandbox.create(self.sandbox_of(pod.job_id), self.private_prefixes)
            env = sandbox.environment(container, pod.fields)
            env[process_tree.POD_MARK] = pod.run_id
            with state.lock:
                if state.killed:
                    return 137, "the pod was stopped before it started"
                state.process = subprocess.Popen(
                    sandbox.argv(container),
                    cwd=sandbox.working_dir(container),
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                )
        except (OSError, ValueError) as exc:
            pod.log.write("stderr", f"failed to start container {container.name}: {exc}")
            return 128, f"failed to start container {container.name}: {exc}"
        process = state.process
        if not reporter.running(pod.run_id):
            self.kill(pod.run_id, 0)
        _pump_output(process, pod.log, pod.run_id)
        code = process.wait()
        process_tree.terminate(process.pid, 0, pod.run_id)  # what it left behind ends with the pod
        exit_code = code if code >= 0 else 128 - code
        if exit_code == 0:
            return 0, ""
        return exit_code, pod.log.stderr_tail() or f"container {container.name} exited with code {exit_code}"


def _pump_output(process: subprocess.Popen, log: PodLog, mark: str) -> None:
    """Copy the pod's stdout and stderr into its log line by line until both close.

    When the main process exits, the pod is over: whatever it left running (found by the pod's
    `mark`, too) is ended, as Kubernetes does when a container's main process exits.
    """
    streams: dict[int, tuple[str, IO[bytes]]] = {}
    selector = selectors.DefaultSelector()
    for name, pipe in (("stdout", process.stdout), ("stderr", process.stderr)):
        assert pipe is not None
        selector.register(pipe, selectors.EVENT_READ)
        streams[pipe.fileno()] = (name, pipe)
    drain_deadline: Optional[float] = None
    while selector.get_map():
        for key, _ in selector.select(timeout=0.1):
            name, pipe = streams[key.fd]
            data = os.read(key.fd, 65536)
            if not data:
                selector.unregister(pipe)
                continue
            log.feed(name, data)
        if drain_deadline is None and process.poll() is not None:
            process_tree.terminate(process.pid, 0, mark)
            drain_deadline = time.monotonic() + _DRAIN_AFTER_EXIT_SECONDS
        if drain_deadline is not None and time.monotonic() > drain_deadline:
            break
    log.flush()
    selector.close()
    for _, pipe in streams.values():
        pipe.close()

