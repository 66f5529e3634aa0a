"""What the control plane hands an executor, and how the executor reports back.

An executor plays the kubelet: it gets a leased pod, says when it is pending and running,
and when it ends, with the exit code and the error a user should see.
"""

from __future__ import annotations

import logging
import platform
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Mapping, Optional, Protocol, TypeVar

from armada_flyte.architecture import host_architecture
from armada_flyte.embedded.logs import PodLog
from armada_flyte.embedded.resources import milli
from armada_flyte.embedded.secrets import PodSecrets

log = logging.getLogger(__name__)

DEFAULT_GRACE_SECONDS = 30.0
"""Kubernetes' default terminationGracePeriodSeconds, used when the pod sets none (or 0)."""


@dataclass(frozen=True)
class PodLaunch:
    """One leased pod: where it was placed and what to run. `pod` is armada_client's k8s PodSpec.

    `labels` and `annotations` are the pod's metadata as Armada's executor sets it (the job's own
    plus Armada's, see `embedded.pod_metadata`); `injected_env` are the variables Armada adds to
    every container that does not set them itself.
    """

    run_id: str
    job_id: str
    pod_name: str
    namespace: str
    node: str
    node_group: str
    architecture: str
    pod: Any
    log: PodLog
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    injected_env: Mapping[str, str] = field(default_factory=dict)
    secrets: PodSecrets = field(default_factory=PodSecrets)
    """The pod's Secret references, resolved before launch (a missing one never reaches an executor)."""

    @property
    def container(self) -> Any:
        return self.pod.containers[0]

    @property
    def fields(self) -> dict[str, str]:
        """The pod fields a `fieldRef` env var may read (labels and annotations: `field_value`)."""
        return {
            "metadata.name": self.pod_name,
            "metadata.namespace": self.namespace,
            "metadata.uid": self.run_id,
            "spec.nodeName": self.node,
            "spec.serviceAccountName": self.pod.serviceAccountName or "default",
            "status.hostIP": "127.0.0.1",
            "status.podIP": "127.0.0.1",
        }

    def field_value(self, path: str) -> str:
        """What Kubernetes puts in an env var whose `fieldRef.fieldPath` is `path` ("" for an unknown field)."""
        for prefix, values in (("metadata.labels", self.labels), ("metadata.annotations", self.annotations)):
            if path.startswith(prefix + "['") and path.endswith("']"):
                return values.get(path[len(prefix) + 2 : -2], "")
        return self.fields.get(path, "")


@dataclass(frozen=True)
class ContainerEnd:
    """How one container ended, as its Kubernetes container status says (reason Completed, Error, OOMKilled...)."""

    name: str
    exit_code: int
    reason: str
    message: str = ""


@dataclass(frozen=True)
class PodEnd:
    """How a pod ended: the run's exit code and error, each container's end, and the pod's own reason if any
    (DeadlineExceeded, as the kubelet sets it when activeDeadlineSeconds passes)."""

    exit_code: int
    error: str = ""
    containers: tuple[ContainerEnd, ...] = ()
    reason: str = ""


DEADLINE_REASON = "DeadlineExceeded"
DEADLINE_MESSAGE = "Pod was active on the node longer than the specified deadline"
"""The pod status reason and message the kubelet sets when activeDeadlineSeconds passes."""


def grace_seconds(pod: Any) -> float:
    """How long a stopped pod gets between SIGTERM and SIGKILL."""
    seconds = pod.terminationGracePeriodSeconds if pod.HasField("terminationGracePeriodSeconds") else 0
    return float(seconds) if seconds > 0 else DEFAULT_GRACE_SECONDS


def active_deadline(pod: Any) -> Optional[float]:
    """The pod's activeDeadlineSeconds, or None when it has none."""
    seconds = pod.activeDeadlineSeconds if pod.HasField("activeDeadlineSeconds") else 0
    return float(seconds) if seconds > 0 else None


def container_env(container: Any, launch: PodLaunch, map_value: Callable[[str], str] = str) -> dict[str, str]:
    """The container's env vars as the kubelet sets them: `envFrom` secrets first, then literal values
    through `map_value`, `fieldRef`s and `resourceFieldRef`s from the pod, `secretKeyRef`s from the
    pod's resolved secrets (an optional one that was missing stays unset, as in Kubernetes), and
    Armada's injected variables where the container sets none."""
    secrets = launch.secrets.of(container.name)
    env = dict(secrets.env_from)
    for var in container.env:
        source = var.valueFrom if var.HasField("valueFrom") else None
        if source is not None and source.HasField("fieldRef"):
            env[var.name] = launch.field_value(source.fieldRef.fieldPath)
        elif source is not None and source.HasField("resourceFieldRef"):
            env[var.name] = resource_field_value(launch.pod, container, source.resourceFieldRef)
        elif source is not None and source.HasField("secretKeyRef"):
            if var.name in secrets.env:
                env[var.name] = secrets.env[var.name]
        else:
            env[var.name] = map_value(var.value)
    for name, value in launch.injected_env.items():
        env.setdefault(name, value)
    return env


def resource_field_value(pod: Any, container: Any, selector: Any) -> str:
    """A `resourceFieldRef`: the container's request or limit divided by the divisor, rounded up (as Kubernetes)."""
    if selector.containerName:
        every = [*pod.initContainers, *pod.containers]
        container = next((c for c in every if c.name == selector.containerName), container)
    kind, _, resource = selector.resource.partition(".")
    quantities = container.resources.limits if kind == "limits" else container.resources.requests
    if resource not in quantities:
        return ""
    divisor = milli(selector.divisor.string) if selector.HasField("divisor") and selector.divisor.string else 1000
    return str(-(-milli(quantities[resource].string) // max(divisor, 1)))


class RunReporter(Protocol):
    """The control plane's side: `pending` and `running` answer False when the run was stopped meanwhile."""

    def pending(self, run_id: str) -> bool: ...

    def running(self, run_id: str) -> bool: ...

    def finished(
        self, run_id: str, exit_code: int, error: str, containers: tuple[ContainerEnd, ...] = (), reason: str = ""
    ) -> None: ...

    def note(self, run_id: str, text: str) -> None: ...


class Executor(Protocol):
    def launch(self, pod: PodLaunch, reporter: RunReporter) -> None:
        """Start the pod without blocking; report its progress through `reporter`."""

    def kill(self, run_id: str, grace_seconds: float) -> None:
        """Stop the pod and everything it started: SIGTERM, then SIGKILL after the grace period."""

    def shutdown(self) -> None:
        """Kill every pod still running and wait until they are gone."""


def host_architecture_name() -> str:
    """This machine's architecture as `kubernetes.io/arch` spells it, or its raw machine name."""
    return str(host_architecture() or platform.machine().lower())


@dataclass
class PodState:
    """One launched pod's bookkeeping; `killed` records a stop asked for before the pod started."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    killed: bool = False
    deadline_passed: bool = False
    thread: Optional[threading.Thread] = None


State = TypeVar("State", bound=PodState)


class PodThreads(Generic[State]):
    """What every executor shares: one thread per pod, a stop that arrives before the start is kept,
    a failure inside the executor still ends the run (or its job would hold its node forever), and
    shutdown stops every pod and waits for it. Subclasses say how a pod runs and how it is stopped."""

    shutdown_grace_seconds = 2.0

    def __init__(self) -> None:
        self._pods: dict[str, State] = {}
        self._lock = threading.Lock()

    def _new_state(self) -> State:
        raise NotImplementedError

    def _run_pod(self, pod: PodLaunch, reporter: RunReporter, state: State) -> PodEnd:
        """Run the pod to its end."""
        raise NotImplementedError

    def _stopper(self, run_id: str, state: State) -> Optional[Callable[[float], None]]:
        """How to stop the pod once it runs (called under `state.lock`); None when nothing runs yet."""
        raise NotImplementedError

    def _failed(self, pod: PodLaunch, exc: Exception) -> PodEnd:
        """The run's end when the executor itself failed running the pod."""
        log.exception("running pod %s failed", pod.pod_name)
        return PodEnd(128, f"the executor failed to run the pod: {exc}")

    def _after(self, pod: PodLaunch) -> None:
        """Called once the run has been reported over (cleanup)."""

    def launch(self, pod: PodLaunch, reporter: RunReporter) -> None:
        state = self._new_state()
        state.thread = threading.Thread(target=self._run, args=(pod, reporter, state), name=pod.pod_name, daemon=True)
        with self._lock:
            self._pods[pod.run_id] = state
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
            stop = self._stopper(run_id, state)
        if stop is not None:
            threading.Thread(target=stop, args=(grace_seconds,), daemon=True).start()

    def _deadline_passed(self, pod: PodLaunch, state: State) -> None:
        """activeDeadlineSeconds has passed since the pod started: the kubelet kills it (with its grace period)."""
        with state.lock:
            state.deadline_passed = True
        self.kill(pod.run_id, grace_seconds(pod.pod))

    def shutdown(self) -> None:
        with self._lock:
            states = list(self._pods.items())
        for run_id, _ in states:
            self.kill(run_id, self.shutdown_grace_seconds)
        for _, state in states:
            if state.thread is not None:
                state.thread.join(timeout=self.shutdown_grace_seconds + 10)

    def _run(self, pod: PodLaunch, reporter: RunReporter, state: State) -> None:
        deadline = active_deadline(pod.pod)
        timer = None
        if deadline is not None:
            timer = threading.Timer(deadline, self._deadline_passed, (pod, state))
            timer.daemon = True
            timer.start()
        try:
            end = self._run_pod(pod, reporter, state)
        except Exception as exc:
            end = self._failed(pod, exc)
        finally:
            if timer is not None:
                timer.cancel()
        if state.deadline_passed:
            pod.log.note(f"activeDeadlineSeconds ({deadline:g}) passed: the pod was killed")
            end = PodEnd(end.exit_code or 137, DEADLINE_MESSAGE, end.containers, DEADLINE_REASON)
        try:
            reporter.finished(pod.run_id, end.exit_code, end.error, end.containers, end.reason)
        finally:
            with self._lock:
                self._pods.pop(pod.run_id, None)
            self._after(pod)


def stop_together(stops: list[Callable[[], None]]) -> None:
    """Run `stops` at once and wait for all: a pod's containers stop together, each getting the
    whole grace period."""
    threads = [threading.Thread(target=stop) for stop in stops]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
