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
import time
from collections import deque
from dataclasses import dataclass
from typing import IO, Callable, Optional

from armada_flyte.embedded.executors import process_tree
from armada_flyte.embedded.executors.base import PodLaunch, PodState, PodThreads, RunReporter, host_architecture_name
from armada_flyte.embedded.executors.sandbox import DEFAULT_PRIVATE_PREFIXES, Sandbox, place_secret_files
from armada_flyte.embedded.logs import PodLog

log = logging.getLogger(__name__)

_DRAIN_AFTER_EXIT_SECONDS = 2.0


@dataclass
class _PodProcess(PodState):
    process: Optional[subprocess.Popen] = None


class ProcessExecutor(PodThreads[_PodProcess]):
    """Runs pods as local processes under `sandbox_root/<job id>/` (a temporary folder by default)."""

    def __init__(
        self,
        sandbox_root: str | pathlib.Path | None = None,
        private_prefixes: tuple[str, ...] = DEFAULT_PRIVATE_PREFIXES,
        kept_sandboxes: int = 500,
    ):
        super().__init__()
        self._owns_root = sandbox_root is None
        self.sandbox_root = pathlib.Path(sandbox_root or tempfile.mkdtemp(prefix="armada-flyte-dev-")).resolve()
        self.sandbox_root.mkdir(parents=True, exist_ok=True)
        self.private_prefixes = private_prefixes
        self.host_architecture = host_architecture_name()
        # Finished pods' sandboxes stay for inspection, the newest `kept_sandboxes` of them, so a
        # long `armada-flyte dev` session doesn't fill the disk.
        self._finished: deque[str] = deque()
        self._kept_sandboxes = kept_sandboxes

    def sandbox_of(self, job_id: str) -> pathlib.Path:
        return self.sandbox_root / job_id

    def _new_state(self) -> _PodProcess:
        return _PodProcess()

    def _stopper(self, run_id: str, state: _PodProcess) -> Optional[Callable[[float], None]]:
        process = state.process
        if process is None:
            return None
        return lambda grace: process_tree.terminate(process.pid, grace, run_id)

    def _failed(self, pod: PodLaunch, exc: Exception) -> tuple[int, str]:
        log.exception("running pod %s failed", pod.pod_name)
        return 128, f"the process executor failed to run the pod: {exc}"

    def _after(self, pod: PodLaunch) -> None:
        with self._lock:
            self._finished.append(pod.job_id)
            expired = [self._finished.popleft() for _ in range(max(0, len(self._finished) - self._kept_sandboxes))]
        for job_id in expired:
            shutil.rmtree(self.sandbox_of(job_id), ignore_errors=True)

    def shutdown(self) -> None:
        super().shutdown()
        if self._owns_root:
            shutil.rmtree(self.sandbox_root, ignore_errors=True)

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
            # Secret volumes' mount paths belong to the pod too: an env var naming a secret file
            # (FLYTE_SECRETS_DEFAULT_DIR, a file secret's as_env_var) points into the sandbox.
            sandbox = Sandbox.create(self.sandbox_of(pod.job_id), (*self.private_prefixes, *pod.secrets.mount_paths))
            place_secret_files(sandbox, pod.secrets.files)
            env = sandbox.environment(container, pod.fields, secrets=pod.secrets)
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
