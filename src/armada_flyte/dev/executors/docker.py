"""The docker executor: each leased pod runs as a container of its image, on its node group's architecture.

With Docker and QEMU binfmt installed, an arm64 pod really runs as linux/arm64 on an amd64
machine (emulated, so slower). Containers share the host network, so pods reach the embedded
server and a local blob store on 127.0.0.1 as the process executor's pods do.
"""

from __future__ import annotations

import threading
from typing import Any

import docker
import docker.errors
import requests

from armada_flyte.dev.executors.base import PodLaunch, RunReporter, container_env, host_architecture
from armada_flyte.dev.requirements import container_requests
from armada_flyte.errors import InvalidConfig

_STOP_GRACE_SECONDS = 2
LABEL_JOB_ID = "armada-flyte.dev/job-id"


def container_options(pod: PodLaunch) -> dict[str, Any]:
    """Keyword arguments for `docker.containers.run` that run the pod's first container as Kubernetes would.

    `command` replaces the image's entrypoint and `args` its cmd, as in a pod; limits become
    Docker's cpu and memory limits.
    """
    container = pod.container
    options: dict[str, Any] = {
        "image": container.image,
        "entrypoint": list(container.command) or None,
        "command": list(container.args) or None,
        "environment": container_env(container, pod.fields),
        "working_dir": container.workingDir or None,
        "platform": f"linux/{pod.architecture}",
        "network_mode": "host",
        "name": pod.pod_name,
        "labels": {LABEL_JOB_ID: pod.job_id},
        "detach": True,
    }
    limits = container_requests(container)
    if "cpu" in limits:
        options["nano_cpus"] = limits["cpu"] * 1_000_000
    if "memory" in limits:
        options["mem_limit"] = limits["memory"] // 1000
    return options


class DockerExecutor:
    """Runs pods through the Docker Engine API (the `docker` package); needs a reachable daemon."""

    def __init__(self, client: Any = None):
        if client is None:
            client = _connect()
        self._client = client
        self._containers: dict[str, Any] = {}
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self.host_architecture = host_architecture()

    def launch(self, pod: PodLaunch, reporter: RunReporter) -> None:
        thread = threading.Thread(target=self._run, args=(pod, reporter), name=pod.pod_name, daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def kill(self, run_id: str, grace_seconds: float) -> None:
        with self._lock:
            container = self._containers.get(run_id)
        if container is not None:
            threading.Thread(target=_stop, args=(container, grace_seconds), daemon=True).start()

    def shutdown(self) -> None:
        with self._lock:
            containers, threads = list(self._containers.values()), list(self._threads)
        for container in containers:
            _stop(container, _STOP_GRACE_SECONDS)
        for thread in threads:
            thread.join(timeout=_STOP_GRACE_SECONDS + 10)

    def _run(self, pod: PodLaunch, reporter: RunReporter) -> None:
        try:
            exit_code, error = self._run_pod(pod, reporter)
        except (docker.errors.DockerException, requests.RequestException) as exc:
            pod.log.write("stderr", f"docker failed running the pod: {exc}")
            exit_code, error = 128, f"docker failed running the pod: {exc}"
        reporter.finished(pod.run_id, exit_code, error)

    def _run_pod(self, pod: PodLaunch, reporter: RunReporter) -> tuple[int, str]:
        if not reporter.pending(pod.run_id):
            return 137, "the pod was stopped before it started"
        if pod.architecture != self.host_architecture:
            reporter.note(
                pod.run_id,
                f"node group {pod.node_group} is {pod.architecture} and this host is {self.host_architecture}: "
                f"the docker executor runs this pod as linux/{pod.architecture} under emulation (QEMU binfmt).",
            )
        container = self._client.containers.run(**container_options(pod))
        with self._lock:
            self._containers[pod.run_id] = container
        try:
            if not reporter.running(pod.run_id):
                _stop(container, 0)
            for stdout, stderr in container.attach(stdout=True, stderr=True, stream=True, logs=True, demux=True):
                if stdout:
                    pod.log.feed("stdout", stdout)
                if stderr:
                    pod.log.feed("stderr", stderr)
            pod.log.flush()
            exit_code = int(container.wait().get("StatusCode", 1))
        finally:
            with self._lock:
                self._containers.pop(pod.run_id, None)
            _remove(container)
        return exit_code, ("" if exit_code == 0 else pod.log.stderr_tail() or f"container exited with code {exit_code}")


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
    try:
        container.stop(timeout=int(grace_seconds))
    except docker.errors.NotFound:
        pass  # already gone


def _remove(container: Any) -> None:
    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass  # already removed
