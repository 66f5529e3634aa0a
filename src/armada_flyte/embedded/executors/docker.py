"""The docker executor: each leased pod runs as a container of its image, on its node group's architecture.

With Docker and QEMU binfmt installed, an arm64 pod really runs as linux/arm64 on an amd64
machine (emulated, so slower). Containers share the host network, so pods reach the embedded
server and a local blob store on 127.0.0.1 as the process executor's pods do.
"""

from __future__ import annotations

import io
import logging
import tarfile
from dataclasses import dataclass
from typing import Any, Callable, Optional

import docker
import docker.errors
import requests

from armada_flyte.embedded.executors.base import (
    PodLaunch,
    PodState,
    PodThreads,
    RunReporter,
    container_env,
    host_architecture_name,
)
from armada_flyte.embedded.requirements import container_requests
from armada_flyte.embedded.secrets import SecretFile
from armada_flyte.errors import InvalidConfig

log = logging.getLogger(__name__)

_STOP_GRACE_SECONDS = 2
LABEL_JOB_ID = "armada-flyte.dev/job-id"


def container_options(pod: PodLaunch) -> dict[str, Any]:
    """Keyword arguments for `docker.containers.create` that run the pod's first container as Kubernetes would.

    `command` replaces the image's entrypoint and `args` its cmd, as in a pod; limits become
    Docker's cpu and memory limits.
    """
    container = pod.container
    options: dict[str, Any] = {
        "image": container.image,
        "entrypoint": list(container.command) or None,
        "command": list(container.args) or None,
        "environment": container_env(container, pod.fields, secrets=pod.secrets),
        "working_dir": container.workingDir or None,
        "platform": f"linux/{pod.architecture}",
        "network_mode": "host",
        "name": pod.pod_name,
        "labels": {LABEL_JOB_ID: pod.job_id},
    }
    limits = container_requests(container)
    if "cpu" in limits:
        options["nano_cpus"] = limits["cpu"] * 1_000_000
    if "memory" in limits:
        options["mem_limit"] = limits["memory"] // 1000
    return options


class _PodCannotStart(Exception):
    """The pod's container could not be created; the message is the job's error."""


@dataclass
class _PodContainer(PodState):
    """One pod's container, once created."""

    container: Optional[Any] = None
    started: bool = False


class DockerExecutor(PodThreads[_PodContainer]):
    """Runs pods through the Docker Engine API (the `docker` package); needs a reachable daemon."""

    def __init__(self, client: Any = None):
        super().__init__()
        if client is None:
            client = _connect()
        self._client = client
        self.host_architecture = host_architecture_name()

    shutdown_grace_seconds = _STOP_GRACE_SECONDS

    def _new_state(self) -> _PodContainer:
        return _PodContainer()

    def _stopper(self, run_id: str, state: _PodContainer) -> Optional[Callable[[float], None]]:
        container = state.container if state.started else None
        if container is None:
            return None
        return lambda grace: _stop(container, grace)

    def _failed(self, pod: PodLaunch, exc: Exception) -> tuple[int, str]:
        if isinstance(exc, _PodCannotStart):
            error = str(exc)
        else:
            log.exception("running pod %s in docker failed", pod.pod_name)
            error = f"docker failed running the pod: {exc}"
        pod.log.write("stderr", error)
        return 128, error

    def _run_pod(self, pod: PodLaunch, reporter: RunReporter, state: _PodContainer) -> tuple[int, str]:
        if not reporter.pending(pod.run_id):
            return 137, "the pod was stopped before it started"
        if pod.architecture != self.host_architecture:
            reporter.note(
                pod.run_id,
                f"node group {pod.node_group} is {pod.architecture} and this host is {self.host_architecture}: "
                f"the docker executor runs this pod as linux/{pod.architecture} under emulation (QEMU binfmt).",
            )
        container = self._create(pod)
        try:
            with state.lock:
                state.container = container
                if state.killed:
                    return 137, "the pod was stopped before it started"
            # Attached before it starts, as `docker run` does: no output is missed, and the
            # stream ends when the container's main process does.
            output = container.attach(stdout=True, stderr=True, stream=True, logs=True, demux=True)
            container.start()
            with state.lock:
                state.started = True
                killed = state.killed
            if killed or not reporter.running(pod.run_id):
                _stop(container, 0)
            for stdout, stderr in output:
                if stdout:
                    pod.log.feed("stdout", stdout)
                if stderr:
                    pod.log.feed("stderr", stderr)
            pod.log.flush()
            exit_code = int(container.wait().get("StatusCode", 1))
        finally:
            _remove(container)
        if exit_code == 0:
            return 0, ""
        error = pod.log.stderr_tail() or f"container {pod.container.name} exited with code {exit_code}"
        if pod.architecture != self.host_architecture and "exec format error" in error:
            hint = (
                f"this {self.host_architecture} host cannot run linux/{pod.architecture} programs: register QEMU for "
                f"{pod.architecture} in binfmt_misc with the F flag (Debian: apt-get install qemu-user-static "
                f"binfmt-support; or `docker run --privileged --rm tonistiigi/binfmt --install {pod.architecture}`)"
            )
            pod.log.note(hint)
            error = f"{error}\n{hint}"
        return exit_code, error

    def _create(self, pod: PodLaunch) -> Any:
        """Create the pod's container (with its secret-volume files in place), pulling its image for the
        pod's platform when Docker lacks it."""
        container = self._create_container(pod)
        if pod.secrets.files:
            try:
                container.put_archive("/", secret_files_archive(pod.secrets.files))
            except BaseException:
                _remove(container)
                raise
        return container

    def _create_container(self, pod: PodLaunch) -> Any:
        options = container_options(pod)
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
                f"image {image} could not be pulled for {platform} (node group {pod.node_group}): "
                f"{pull_error or 'Docker has no image of that name'}"
            )
        tried = (
            f"pulling it for {platform} failed: {pull_error}"
            if pull_error
            else f"the pull brought no {platform} variant"
        )
        held_architecture = held.split("/")[1]
        raise _PodCannotStart(
            f"image {image} has no {platform} variant, which node group {pod.node_group} needs: Docker holds it for "
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
            "executor", "docker", f"no Docker daemon is reachable ({exc}); start Docker or use the process executor"
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


def _remove(container: Any) -> None:
    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass  # already removed
