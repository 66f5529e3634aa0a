"""The process pod runner: each leased pod runs for real, as local processes in its own sandbox.

Containers run as Kubernetes runs them: the init containers first, one after another, each to
success; then all main containers together; the pod ends when all main containers have ended,
and fails with the exit code of the first that failed. Each container is a process started
through the container shim (`pod_shim.py`), which ends the container's processes with it, with
the server (even on SIGKILL), and when they go over the container's memory limit (OOMKilled).
Every container's stdout and stderr become the job's log. Pods run on this machine's CPU: when
the pod's node set has another architecture, the log and job details say so plainly. Pods are
fenced (`pod_fence.py`): limits on processes and file size, and, when the server is root, a uid of
their own and a view of the host without the server's home (`host_view.py`).
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import pathlib
import py_compile
import selectors
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Optional

from armada_flyte.architecture import host_architecture_name
from armada_flyte.kube import container_requests
from armada_flyte.pod_runner import process_tree
from armada_flyte.pod_runner.cpu_pins import CpuPins
from armada_flyte.pod_runner.cpu_shares import cpu_nice
from armada_flyte.pod_runner.host_view import HostView, host_view, needed_by_pods, server_homes
from armada_flyte.pod_runner.images import Image, ImageCatalogue, pull_failure_message, pull_failure_reason
from armada_flyte.pod_runner.model import ContainerEnd, PodEnd, PodLaunch, RunReporter
from armada_flyte.pod_runner.pod_fence import PodFence, PodUids, root_refused, run_as_user, shim_options
from armada_flyte.pod_runner.pod_log import PodLog
from armada_flyte.pod_runner.pod_shim import CPU_NICE
from armada_flyte.pod_runner.pod_threads import PodState, PodThreads, stop_together
from armada_flyte.pod_runner.sandbox import (
    DEFAULT_PRIVATE_PREFIXES,
    Sandbox,
    hand_over,
    place_secret_files,
    place_service_account,
    remove_inside,
    take_back,
)
from armada_flyte.pod_runner.shim_report import ContainerLimits, container_end, read_shim_report

log = logging.getLogger(__name__)

_DRAIN_AFTER_EXIT_SECONDS = 2.0
_SHIM = pathlib.Path(__file__).with_name("pod_shim.py")
_STOPPED = "the pod was stopped before it started"
_PR_SET_DUMPABLE = 4
IMAGE_PULL_FAILED = "ErrImagePull"
"""The run's end reason when its image could not be pulled (the container's Waiting reason on a kubelet)."""


@functools.cache
def _shim_program() -> str:
    """The shim compiled, once per server (its source where its __pycache__ can't be written): every pod's shim
    then starts without compiling over 400 lines, a fifth of its CPU."""
    try:
        return py_compile.compile(str(_SHIM), doraise=True)
    except (OSError, py_compile.PyCompileError):
        return str(_SHIM)


@dataclass
class _Container:
    """One started container: its shim process and what it reports."""

    name: str
    process: subprocess.Popen
    status: int
    """The read end of the shim's status pipe."""
    limits: ContainerLimits
    cpus: tuple[int, ...] = ()
    """The CPUs it is pinned to (none: it runs on every CPU)."""
    stderr: deque[str] = field(default_factory=lambda: deque(maxlen=20))


@dataclass
class _PodProcess(PodState):
    containers: list[_Container] = field(default_factory=list)
    stop_asked: threading.Event = field(default_factory=threading.Event)
    """Set by a kill, so a pod waiting before its containers start (a failed image pull) ends at once."""


def protect_server_environment() -> None:
    """Make this process non-dumpable, so a pod (same user, or root without capabilities) can't read
    /proc/<server>/environ or its memory. Linux only; elsewhere a no-op."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


class ProcessPodRunner(PodThreads[_PodProcess]):
    """Runs pods as local processes under `sandbox_root/<job id>/` (a temporary folder by default)."""

    def __init__(
        self,
        sandbox_root: str | pathlib.Path | None = None,
        private_prefixes: tuple[str, ...] = DEFAULT_PRIVATE_PREFIXES,
        kept_sandboxes: int = 500,
        images: Optional[ImageCatalogue] = None,
        cpu_shares: bool = False,
        kubeconfig: Optional[Callable[[str], str]] = None,
        fence: PodFence = PodFence(),
    ):
        super().__init__()
        self.images = images
        """The images the nodes hold; None: any image runs, on the host's programs."""
        self.cpu_shares = cpu_shares
        """Whether containers get CPU priority by their cpu request (Kubernetes' cpu.shares, as a nice level)."""
        protect_server_environment()
        self.cpu_pins = CpuPins()
        self._owns_root = sandbox_root is None
        self.sandbox_root = pathlib.Path(sandbox_root or tempfile.mkdtemp(prefix="armada-flyte-dev-")).resolve()
        self.sandbox_root.mkdir(parents=True, exist_ok=True)
        self.fence = fence
        self.uids: Optional[PodUids] = None
        """The pods' own uids, when the server is root (else pods run as the server's user)."""
        self.host_view = HostView()
        if os.geteuid() == 0 and sys.platform.startswith("linux"):
            self.uids = PodUids(fence)
            self.sandbox_root.chmod(0o711)  # pods pass through to their own sandbox; none lists the others
            self._take_back_left_sandboxes()
            programs = images.program_folders() if images is not None else []
            self.host_view = host_view(server_homes(), needed_by_pods(self.sandbox_root, programs))
        self.private_prefixes = private_prefixes
        self.host_architecture = host_architecture_name()
        # Finished pods' sandboxes stay for inspection, the newest `kept_sandboxes` of them, so a
        # long `armada-flyte dev` session doesn't fill the disk.
        self._finished: deque[str] = deque()
        self._kept_sandboxes = kept_sandboxes
        self.kubeconfig = kubeconfig
        """The text of the kubeconfig a pod of the given namespace gets in its HOME, from a launcher that
        serves a Kubernetes API to its pods (the embedded server sets it once that API is up); None: none."""

    def sandbox_of(self, job_id: str) -> pathlib.Path:
        return self.sandbox_root / job_id

    def _take_back_left_sandboxes(self) -> None:
        """Sandboxes a server stopped mid-pod left owned by a pod's uid go back to root, before a new pod gets
        that uid."""
        for entry in os.scandir(self.sandbox_root):
            if entry.is_dir(follow_symlinks=False) and self.fence.owns(entry.stat(follow_symlinks=False).st_uid):
                take_back(pathlib.Path(entry.path))

    def _new_state(self) -> _PodProcess:
        return _PodProcess()

    def _stopper(self, run_id: str, state: _PodProcess) -> Optional[Callable[[float], None]]:
        state.stop_asked.set()
        containers = list(state.containers)
        if not containers:
            return None

        def stop(grace: float) -> None:
            stop_together(
                [lambda c=c: process_tree.terminate(c.process.pid, grace, _mark(run_id, c.name)) for c in containers]
            )

        return stop

    def _failed(self, pod: PodLaunch, exc: Exception) -> PodEnd:
        log.exception("running pod %s failed", pod.pod_name)
        return PodEnd(128, f"the process pod runner failed to run the pod: {exc}")

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

    def _run_pod(self, pod: PodLaunch, reporter: RunReporter, state: _PodProcess) -> PodEnd:
        if not reporter.pending(pod.run_id):
            return PodEnd(137, _STOPPED)
        images = {}
        for container in [*pod.pod.initContainers, *pod.pod.containers]:
            if self.uids is not None and run_as_user(pod.pod, container) == 0:
                error = root_refused(container.name)
                pod.log.write("stderr", error)
                return PodEnd(128, error, (ContainerEnd(container.name, 128, "CreateContainerConfigError", error),))
            image = self.images.find(container.image) if self.images is not None else None
            if self.images is not None and image is None:
                return self._pull_failed(pod, container, state)
            images[container.name] = image
            given = [*container.command, *container.args]
            if not (image.argv(list(container.command), list(container.args)) if image else given):
                error = (
                    f"container {container.name} has no command or args: the process pod runner cannot run the "
                    "image's own entrypoint unless the cluster file's images section gives it; give the command "
                    "in the pod spec, or use the docker pod runner"
                )
                pod.log.write("stderr", error)
                return PodEnd(128, error, (ContainerEnd(container.name, 128, "StartError", error),))
        if pod.architecture != self.host_architecture:
            reporter.note(
                pod.run_id,
                f"node set {pod.node_set} is {pod.architecture} but this host is {self.host_architecture}: "
                f"the process pod runner ran this pod natively on {self.host_architecture}, not on {pod.architecture}. "
                f"To run it on {pod.architecture}, use the docker pod runner with QEMU binfmt installed.",
            )
        uid = self.uids.take() if self.uids is not None else None
        if uid is not None and any(run_as_user(pod.pod, c) for c in [*pod.pod.initContainers, *pod.pod.containers]):
            reporter.note(pod.run_id, f"runAsUser was not followed: process pods run as a uid of their own ({uid})")
        secret_files: list[pathlib.Path] = []
        try:
            views = self._prepare(pod, images, uid, secret_files)
            return self._run_containers(pod, reporter, state, views, uid)
        finally:
            root = self.sandbox_of(pod.job_id).resolve()
            remove_inside(root, secret_files)
            if uid is not None and self.uids is not None:
                take_back(root)
                self.uids.give_back(uid)

    def _prepare(
        self, pod: PodLaunch, images: dict[str, Optional[Image]], uid: Optional[int], secret_files: list[pathlib.Path]
    ) -> dict[str, Sandbox]:
        """The pod's sandbox, all of it, before any container runs (as a kubelet sets a pod's volumes up), then
        given to the pod's uid: each container's view of it. The secret files placed are added to `secret_files`."""
        # Secret volumes' mount paths are private paths of the pod: an env var naming a secret file
        # (FLYTE_SECRETS_DEFAULT_DIR, a file secret's as_env_var) points into the sandbox too.
        sandbox = Sandbox.create(self.sandbox_of(pod.job_id), (*self.private_prefixes, *pod.secrets.mount_paths))
        kubeconfig = self.kubeconfig(pod.namespace) if self.kubeconfig is not None else None
        place_service_account(sandbox, pod.namespace, kubeconfig)
        views = {}
        for spec in [*pod.pod.initContainers, *pod.pod.containers]:
            view = sandbox.for_container(spec, skip_volumes=pod.secrets.secret_volumes, image=images[spec.name])
            view.make_folders(spec)
            secret_files += place_secret_files(view, pod.secrets.of(spec.name).files)
            views[spec.name] = view
        if uid is not None:
            hand_over(sandbox.root, uid)
        return views

    def _run_containers(
        self, pod: PodLaunch, reporter: RunReporter, state: _PodProcess, views: dict[str, Sandbox], uid: Optional[int]
    ) -> PodEnd:
        ends: list[ContainerEnd] = []
        for spec in pod.pod.initContainers:
            started = self._start(pod, spec, views[spec.name], state, uid)
            if started is None:
                return PodEnd(137, _STOPPED, tuple(ends))
            (end,) = self._wait_for(pod, [started])
            ends.append(end)
            if end.exit_code != 0:
                return _failed_pod(ends, end, init=True)
        started_mains = []
        for spec in pod.pod.containers:
            started = self._start(pod, spec, views[spec.name], state, uid)
            if started is None:
                self.kill(pod.run_id, 0)
                break
            started_mains.append(started)
        if started_mains and not reporter.running(pod.run_id):
            self.kill(pod.run_id, 0)
        main_ends = self._wait_for(pod, started_mains)
        ends += main_ends
        if len(started_mains) < len(pod.pod.containers):
            return PodEnd(137, _STOPPED, tuple(ends))
        failed = next((end for end in main_ends if end.exit_code != 0), None)
        return PodEnd(0, "", tuple(ends)) if failed is None else _failed_pod(ends, failed, init=False)

    def _pull_failed(self, pod: PodLaunch, container: Any, state: _PodProcess) -> PodEnd:
        """No node holds the container's image: the pod stays pending (ErrImagePull, then ImagePullBackOff)
        until Armada's executor gives up on it after its pending-pod check's grace period, or it is stopped."""
        pod.log.note(f"Warning Failed: {pull_failure_message(container.image)}")
        assert self.images is not None
        if state.stop_asked.wait(self.images.pull_failure_grace_seconds):
            return PodEnd(137, _STOPPED)
        return PodEnd(0, pull_failure_reason(container.image), (), IMAGE_PULL_FAILED)

    def _start(
        self, pod: PodLaunch, spec: Any, sandbox: Sandbox, state: _PodProcess, uid: Optional[int]
    ) -> Optional[_Container]:
        """Start one container through the shim, in its view of the sandbox; None when the pod was stopped first."""
        memory_folders = sandbox.memory_folders(spec, _memory_volumes(pod.pod))
        env = sandbox.environment(spec, pod)
        env[process_tree.POD_MARK] = _mark(pod.run_id, spec.name)
        limits = container_requests(spec)
        if self.cpu_shares:
            env[CPU_NICE] = str(cpu_nice(limits.get("cpu", 0)))
        memory_limit = limits.get("memory", 0) // 1000
        storage = limits.get("ephemeral-storage", 0) // 1000
        fence = shim_options(self.fence, storage, uid, self.host_view.shim_arguments())
        read_end, write_end = os.pipe()
        cpus: tuple[int, ...] = ()
        try:
            with state.lock:
                if state.killed:
                    return None
                cpus = self.cpu_pins.take(limits.get("cpu", 0))
                process = subprocess.Popen(
                    [
                        sys.executable,
                        "-I",
                        "-S",
                        _shim_program(),
                        str(write_end),
                        str(os.getpid()),
                        str(memory_limit),
                        ",".join(map(str, cpus)) or "-",
                        *fence,
                        *(f"--memory={folder}" for folder in memory_folders),
                        "--",
                        *sandbox.argv(spec),
                    ],
                    cwd=sandbox.working_dir(spec),
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                    pass_fds=(write_end,),
                )
                ends_at = ContainerLimits(memory_limit, self.fence.pids_limit, self.fence.file_size_for(storage))
                container = _Container(spec.name, process, read_end, ends_at, cpus)
                state.containers.append(container)
                return container
        except BaseException:
            self.cpu_pins.release(cpus)
            os.close(read_end)
            raise
        finally:
            os.close(write_end)

    def _wait_for(self, pod: PodLaunch, containers: list[_Container]) -> list[ContainerEnd]:
        """Copy the containers' output into the pod's log until all have ended; how each ended."""
        try:
            _pump_output(containers, pod.log)
            ends = []
            for container in containers:
                report = read_shim_report(container.status, container.process.wait())
                if not report.reaped:  # the shim was killed, or a process outlived its SIGKILLs
                    process_tree.terminate(container.process.pid, 0, _mark(pod.run_id, container.name))
                ends.append(container_end(container.name, report, container.limits, container.stderr))
            return ends
        finally:
            for container in containers:
                self.cpu_pins.release(container.cpus)


def _memory_volumes(pod: Any) -> frozenset[str]:
    """The pod's emptyDir volumes with medium Memory: tmpfs, charged to the memory of the containers that write it."""
    return frozenset(
        volume.name
        for volume in pod.volumes
        if volume.volumeSource.HasField("emptyDir") and volume.volumeSource.emptyDir.medium == "Memory"
    )


def _mark(run_id: str, container: str) -> str:
    return f"{run_id}/{container}"


def _failed_pod(ends: list[ContainerEnd], failed: ContainerEnd, init: bool) -> PodEnd:
    kind = "init container" if init else "container"
    if failed.reason == "OOMKilled":
        error = f"{kind} {failed.name} was OOMKilled: {failed.message}"
    else:
        error = failed.message
    return PodEnd(failed.exit_code, error, tuple(ends))


def _pump_output(containers: list[_Container], log: PodLog) -> None:
    """Copy every container's stdout and stderr into the pod's log line by line until all close.

    The shim ends whatever a container left running when its main process exits, so the pipes
    close then; a process that escaped it gets a short drain and is left behind.
    """
    streams: dict[int, tuple[str, IO[bytes], _Container]] = {}
    selector = selectors.DefaultSelector()
    for container in containers:
        for name, pipe in (("stdout", container.process.stdout), ("stderr", container.process.stderr)):
            assert pipe is not None
            selector.register(pipe, selectors.EVENT_READ)
            streams[pipe.fileno()] = (name, pipe, container)
    drain_deadline: Optional[float] = None
    while selector.get_map():
        for key, _ in selector.select(timeout=0.1):
            name, pipe, container = streams[key.fd]
            data = os.read(key.fd, 65536)
            if not data:
                selector.unregister(pipe)
                continue
            log.feed(name, data)
            if name == "stderr":
                container.stderr.extend(line for line in data.decode(errors="replace").splitlines() if line)
        if drain_deadline is None and all(c.process.poll() is not None for c in containers):
            drain_deadline = time.monotonic() + _DRAIN_AFTER_EXIT_SECONDS
        if drain_deadline is not None and time.monotonic() > drain_deadline:
            break
    log.flush()
    selector.close()
    for _, pipe, _ in streams.values():
        pipe.close()
