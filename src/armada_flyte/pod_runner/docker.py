"""The docker pod runner: each leased pod runs as containers of its images, on its node set's architecture.

Containers run as Kubernetes runs them: init containers one after another, each to success,
then all main containers together; the pod ends when all main containers have. Volumes are
Docker volumes of the pod (`<pod name>-<volume>`), shared by the containers that mount them
and removed with the pod, as an emptyDir is. A container Docker kills for its memory limit
ends OOMKilled.

With Docker and QEMU binfmt installed, an arm64 pod really runs as linux/arm64 on an amd64
machine (emulated, so slower). Containers share the host network, so pods reach the embedded
server and a local blob store on 127.0.0.1 as the process pod runner's pods do.

Containers are fenced (`pod_fence.py`): every capability dropped and only the ones Kubernetes'
container runtime leaves a container added back (containerd's default set, `defaultUnixCaps` in
its pkg/oci/spec.go), less NET_RAW, which on the host network would let a pod read and forge the
host's traffic (Pod Security Standards' baseline allows the same list: it leaves NET_RAW out too);
no-new-privileges; a pids limit; and a file-size limit (ulimit fsize).
"""

from __future__ import annotations

import io
import logging
import tarfile
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import docker
import docker.errors
import docker.types
import requests

from armada_flyte.architecture import host_architecture_name
from armada_flyte.errors import InvalidConfig
from armada_flyte.kube import container_requests
from armada_flyte.pod_runner.container_env import container_env
from armada_flyte.pod_runner.model import ContainerEnd, PodEnd, PodLaunch, RunReporter
from armada_flyte.pod_runner.pod_fence import PodFence, run_as_group, run_as_user
from armada_flyte.pod_runner.pod_log import PodLog
from armada_flyte.pod_runner.pod_secrets import SecretFile
from armada_flyte.pod_runner.pod_threads import PodState, PodThreads, stop_together

log = logging.getLogger(__name__)

_STOP_GRACE_SECONDS = 2
_STOPPED = "the pod was stopped before it started"
LABEL_JOB_ID = "armada-flyte.dev/job-id"
CAPABILITIES = (
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
)
"""What a container gets back after dropping ALL: containerd's default set less NET_RAW."""


def container_options(pod: PodLaunch, spec: Any = None, name: str = "", fence: PodFence = PodFence()) -> dict[str, Any]:
    """Keyword arguments for `docker.containers.create` that run container `spec` (the first main one by
    default) of the pod as Kubernetes would, fenced by `fence`.

    `command` replaces the image's entrypoint and `args` its cmd, as in a pod; limits become
    Docker's cpu and memory limits; volume mounts become the pod's Docker volumes; runAsUser (the
    container's, else the pod's) and runAsGroup become the user.
    """
    container = spec if spec is not None else pod.container
    limits = container_requests(container)
    file_size = fence.file_size_for(limits.get("ephemeral-storage", 0) // 1000)
    options: dict[str, Any] = {
        "image": container.image,
        "entrypoint": list(container.command) or None,
        "command": list(container.args) or None,
        "environment": container_env(container, pod),
        "working_dir": container.workingDir or None,
        "platform": f"linux/{pod.architecture}",
        "network_mode": "host",
        "name": name or pod.pod_name,
        "labels": {LABEL_JOB_ID: pod.job_id},
        "cap_drop": ["ALL"],
        "cap_add": list(CAPABILITIES),
        "security_opt": ["no-new-privileges"],
        "pids_limit": fence.pids_limit,
        "ulimits": [docker.types.Ulimit(name="fsize", soft=file_size, hard=file_size)],
    }
    uid = run_as_user(pod.pod, container)
    if uid is not None:
        group = run_as_group(pod.pod, container)
        options["user"] = f"{uid}:{group}" if group is not None else str(uid)
    # Secret volumes are not Docker volumes: their files are copied into the container before it starts.
    mounts = [m for m in container.volumeMounts if m.name not in pod.secrets.secret_volumes]
    if mounts:
        options["volumes"] = {
            pod_volume(pod, mount.name): {"bind": mount.mountPath, "mode": "ro" if mount.readOnly else "rw"}
            for mount in mounts
        }
    if "cpu" in limits:
        options["nano_cpus"] = limits["cpu"] * 1_000_000
    if "memory" in limits:
        options["mem_limit"] = limits["memory"] // 1000
    return options


def pod_volume(pod: PodLaunch, volume: str) -> str:
    """The Docker volume that holds the pod's volume `volume`."""
    return f"{pod.pod_name}-{volume}"


class _PodCannotStart(Exception):
    """The pod's container could not be created; the message is the job's error."""


@dataclass
class _PodContainer(PodState):
    """One pod's containers, once started."""

    started: list[Any] = field(default_factory=list)


class DockerPodRunner(PodThreads[_PodContainer]):
    """Runs pods through the Docker Engine API (the `docker` package); needs a reachable daemon."""

    def __init__(self, client: Any = None, fence: PodFence = PodFence()):
        super().__init__()
        if client is None:
            client = _connect()
        self._client = client
        self.fence = fence
        self.host_architecture = host_architecture_name()

    shutdown_grace_seconds = _STOP_GRACE_SECONDS

    def _new_state(self) -> _PodContainer:
        return _PodContainer()

    def _stopper(self, run_id: str, state: _PodContainer) -> Optional[Callable[[float], None]]:
        containers = list(state.started)
        if not containers:
            return None

        def stop(grace: float) -> None:
            stop_together([lambda c=c: _stop(c, grace) for c in containers])

        return stop

    def _failed(self, pod: PodLaunch, exc: Exception) -> PodEnd:
        if isinstance(exc, _PodCannotStart):
            error = str(exc)
        else:
            log.exception("running pod %s in docker failed", pod.pod_name)
            error = f"docker failed running the pod: {exc}"
        pod.log.write("stderr", error)
        return PodEnd(128, error)

    def _after(self, pod: PodLaunch) -> None:
        for spec in [*pod.pod.initContainers, *pod.pod.containers]:
            for mount in spec.volumeMounts:
                _remove_volume(self._client, pod_volume(pod, mount.name))

    def _run_pod(self, pod: PodLaunch, reporter: RunReporter, state: _PodContainer) -> PodEnd:
        if not reporter.pending(pod.run_id):
            return PodEnd(137, _STOPPED)
        if pod.architecture != self.host_architecture:
            reporter.note(
                pod.run_id,
                f"node set {pod.node_set} is {pod.architecture} and this host is {self.host_architecture}: "
                f"the docker pod runner runs this pod as linux/{pod.architecture} under emulation (QEMU binfmt).",
            )
        ends: list[ContainerEnd] = []
        for spec in pod.pod.initContainers:
            (end,) = self._run_together(pod, [spec], state, f"{pod.pod_name}-init-")
            if end is None:
                return PodEnd(137, _STOPPED, tuple(ends))
            ends.append(end)
            if end.exit_code != 0:
                return self._failure(pod, ends, end, "init container")
        main_ends = self._run_together(pod, list(pod.pod.containers), state, "", reporter)
        if any(end is None for end in main_ends):
            return PodEnd(137, _STOPPED, tuple(e for e in (*ends, *main_ends) if e is not None))
        ends += [e for e in main_ends if e is not None]
        failed = next((e for e in main_ends if e is not None and e.exit_code != 0), None)
        return PodEnd(0, "", tuple(ends)) if failed is None else self._failure(pod, ends, failed, "container")

    def _run_together(
        self,
        pod: PodLaunch,
        specs: list[Any],
        state: _PodContainer,
        prefix: str,
        reporter: Optional[RunReporter] = None,
    ) -> list[Optional[ContainerEnd]]:
        """Create, start and wait for the containers `specs` together; None for each if the pod was stopped first.

        The first main container keeps the pod's name (as before); the others are `<pod>-<container>`.
        """
        created = []
        try:
            for index, spec in enumerate(specs):
                name = pod.pod_name if not prefix and index == 0 else f"{pod.pod_name}-{prefix}{spec.name}"
                created.append((spec, self._create(pod, spec, name)))
            with state.lock:
                if state.killed:
                    return [None] * len(specs)
            # Attached before they start, as `docker run` does: no output is missed, and each stream ends
            # when its container's main process does.
            outputs = [
                container.attach(stdout=True, stderr=True, stream=True, logs=True, demux=True)
                for _, container in created
            ]
            for _, container in created:
                container.start()
            with state.lock:
                state.started.extend(container for _, container in created)
                killed = state.killed
            if killed or (reporter is not None and not reporter.running(pod.run_id)):
                for _, container in created:
                    _stop(container, 0)
            tails: list[deque[str]] = [deque(maxlen=20) for _ in created]
            readers = [
                threading.Thread(target=_copy_output, args=(output, pod.log, tail))
                for output, tail in zip(outputs, tails)
            ]
            for reader in readers:
                reader.start()
            for reader in readers:
                reader.join()
            pod.log.flush()
            return [_container_end(spec, container, tail) for (spec, container), tail in zip(created, tails)]
        finally:
            for _, container in created:
                _remove(container)

    def _failure(self, pod: PodLaunch, ends: list[ContainerEnd], failed: ContainerEnd, kind: str) -> PodEnd:
        error = failed.message
        if failed.reason == "OOMKilled":
            error = f"{kind} {failed.name} was OOMKilled: it went over its memory limit"
        if pod.architecture != self.host_architecture and "exec format error" in error:
            hint = (
                f"this {self.host_architecture} host cannot run linux/{pod.architecture} programs: register QEMU for "
                f"{pod.architecture} in binfmt_misc with the F flag (Debian: apt-get install qemu-user-static "
                f"binfmt-support; or `docker run --privileged --rm tonistiigi/binfmt --install {pod.architecture}`)"
            )
            pod.log.note(hint)
            error = f"{error}\n{hint}"
        return PodEnd(failed.exit_code, error, tuple(ends))

    def _create(self, pod: PodLaunch, spec: Any, name: str) -> Any:
        """Create one container of the pod (with its secret-volume files in place), pulling its image for
        the pod's platform when Docker lacks it."""
        container = self._create_container(pod, spec, name)
        files = pod.secrets.of(spec.name).files
        if files:
            try:
                container.put_archive("/", secret_files_archive(files))
            except BaseException:
                _remove(container)
                raise
        return container

    def _create_container(self, pod: PodLaunch, spec: Any, name: str) -> Any:
        options = container_options(pod, spec, name, self.fence)
        image, platform = options["image"], options["platform"]
        try:
            return self._client.containers.create(**options)
        except docker.errors.ImageNotFound:
            pass  # not here for this platform: pull it, as the kubelet would
        pull_error = self._pull(image, platform)
        try:
            return self._client.containers.create(**options)
        except docker.errors.ImageNotFound:
            pass
        held = self._platform_held(image)
        if held is None:
            raise _PodCannotStart(
                f"image {image} could not be pulled for {platform} (node set {pod.node_set}): "
                f"{pull_error or 'Docker has no image of that name'}"
            )
        tried = (
            f"pulling it for {platform} failed: {pull_error}"
            if pull_error
            else f"the pull brought no {platform} variant"
        )
        held_architecture = held.split("/")[1]
        raise _PodCannotStart(
            f"image {image} has no {platform} variant, which node set {pod.node_set} needs: Docker holds it for "
            f"{held} only, and {tried}. Build the image for {platform} too (a multi-platform image, e.g. "
            f"`docker buildx build --platform linux/amd64,linux/arm64`), or pin the pod to {held_architecture} nodes "
            f"(nodeSelector kubernetes.io/arch={held_architecture})."
        )

    def _pull(self, image: str, platform: str) -> str:
        """Pull `image` for `platform`; the daemon's error, or "" when the pull went through."""
        try:
            for message in self._client.api.pull(image, stream=True, decode=True, platform=platform):
                if "error" in message:
                    return str(message.get("errorDetail", {}).get("message") or message["error"])
        except docker.errors.APIError as exc:
            return str(exc.explanation or exc)
        return ""

    def _platform_held(self, image: str) -> Optional[str]:
        """The platform of the image Docker holds under this name, or None when it holds none."""
        try:
            attrs = self._client.images.get(image).attrs
        except docker.errors.ImageNotFound:
            return None
        variant = f"/{attrs['Variant']}" if attrs.get("Variant") else ""
        return f"{attrs.get('Os', 'linux')}/{attrs.get('Architecture', 'unknown')}{variant}"


def secret_files_archive(files: tuple[SecretFile, ...]) -> bytes:
    """A tar of the secret files at their absolute paths (copied in, so a remote daemon works too)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        folders: set[str] = set()
        for secret_file in files:
            path = secret_file.path.lstrip("/")
            parts = path.split("/")[:-1]
            for depth in range(1, len(parts) + 1):
                folder = "/".join(parts[:depth])
                if folder not in folders:
                    folders.add(folder)
                    info = tarfile.TarInfo(folder)
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    archive.addfile(info)
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(secret_file.data), secret_file.mode & 0o777
            archive.addfile(info, io.BytesIO(secret_file.data))
    return buffer.getvalue()


def _connect() -> Any:
    try:
        client = docker.from_env()
        client.ping()
    except (docker.errors.DockerException, requests.RequestException) as exc:
        raise InvalidConfig(
            "pod_runner", "docker", f"no Docker daemon is reachable ({exc}); start Docker or use the process pod runner"
        ) from None
    return client


def _stop(container: Any, grace_seconds: float) -> None:
    """SIGTERM, then SIGKILL after the grace period (Docker's stop); a container already gone is fine."""
    try:
        container.stop(timeout=int(grace_seconds))
    except docker.errors.NotFound:
        pass  # already gone
    except (docker.errors.APIError, requests.RequestException) as exc:
        log.warning("stopping container %s failed: %s", container.name, exc)


def _copy_output(output: Any, log: PodLog, stderr_tail: deque[str]) -> None:
    for stdout, stderr in output:
        if stdout:
            log.feed("stdout", stdout)
        if stderr:
            log.feed("stderr", stderr)
            stderr_tail.extend(line for line in stderr.decode(errors="replace").splitlines() if line)


def _container_end(spec: Any, container: Any, stderr_tail: deque[str]) -> ContainerEnd:
    """How the container ended: its exit code, and OOMKilled when Docker killed it for its memory limit."""
    exit_code = int(container.wait().get("StatusCode", 1))
    try:
        container.reload()
        oom = bool(container.attrs.get("State", {}).get("OOMKilled"))
    except (docker.errors.APIError, requests.RequestException):
        oom = False
    if oom:
        return ContainerEnd(spec.name, exit_code, "OOMKilled", "the container went over its memory limit")
    if exit_code == 0:
        return ContainerEnd(spec.name, 0, "Completed")
    message = "\n".join(stderr_tail) or f"container {spec.name} exited with code {exit_code}"
    return ContainerEnd(spec.name, exit_code, "Error", message)


def _remove_volume(client: Any, name: str) -> None:
    try:
        client.volumes.get(name).remove(force=True)
    except docker.errors.NotFound:
        pass
    except (docker.errors.APIError, requests.RequestException) as exc:
        log.warning("removing volume %s failed: %s", name, exc)


def _remove(container: Any) -> None:
    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass  # already removed
