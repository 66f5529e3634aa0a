"""What the control plane hands an executor, and how the executor reports back.

An executor plays the kubelet: it gets a leased pod, says when it is pending and running,
and when it ends, with the exit code and the error a user should see.
"""

from __future__ import annotations

import logging
import platform
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Optional, Protocol, TypeVar

from armada_flyte.architecture import host_architecture
from armada_flyte.embedded.logs import PodLog
from armada_flyte.embedded.secrets import PodSecrets

log = logging.getLogger(__name__)

DEFAULT_GRACE_SECONDS = 30.0
"""Kubernetes' default terminationGracePeriodSeconds, used when the pod sets none (or 0)."""


@dataclass(frozen=True)
class PodLaunch:
    """One leased pod: where it was placed and what to run. `pod` is armada_client's k8s PodSpec."""

    run_id: str
    job_id: str
    pod_name: str
    namespace: str
    node: str
    node_group: str
    architecture: str
    pod: Any
    log: PodLog
    secrets: PodSecrets = field(default_factory=PodSecrets)
    """The pod's Secret references, resolved before launch (a missing one never reaches an executor)."""

    @property
    def container(self) -> Any:
        return self.pod.containers[0]

    @property
    def fields(self) -> dict[str, str]:
        """The pod fields a `fieldRef` env var may read."""
        return {"metadata.name": self.pod_name, "metadata.namespace": self.namespace, "spec.nodeName": self.node}


def grace_seconds(pod: Any) -> float:
    """How long a stopped pod gets between SIGTERM and SIGKILL."""
    seconds = pod.terminationGracePeriodSeconds if pod.HasField("terminationGracePeriodSeconds") else 0
    return float(seconds) if seconds > 0 else DEFAULT_GRACE_SECONDS


def container_env(
    container: Any,
    fields: dict[str, str],
    map_value: Callable[[str], str] = str,
    secrets: Optional[PodSecrets] = None,
) -> dict[str, str]:
    """The container's env vars: literal values through `map_value`, `fieldRef`s from the pod's fields,
    `envFrom` secrets first and `secretKeyRef`s from the resolved `secrets` (an optional one that
    was missing stays unset, as in Kubernetes)."""
    secrets = secrets or PodSecrets()
    env = dict(secrets.env_from)
    for var in container.env:
        if var.HasField("valueFrom") and var.valueFrom.HasField("fieldRef"):
            env[var.name] = fields.get(var.valueFrom.fieldRef.fieldPath, "")
        elif var.HasField("valueFrom") and var.valueFrom.HasField("secretKeyRef"):
            if var.name in secrets.env:
                env[var.name] = secrets.env[var.name]
        else:
            env[var.name] = map_value(var.value)
    return env


class RunReporter(Protocol):
    """The control plane's side: `pending` and `running` answer False when the run was stopped meanwhile."""

    def pending(self, run_id: str) -> bool: ...

    def running(self, run_id: str) -> bool: ...

    def finished(self, run_id: str, exit_code: int, error: str) -> None: ...

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

    def _run_pod(self, pod: PodLaunch, reporter: RunReporter, state: State) -> tuple[int, str]:
        """Run the pod to its end: (exit code, error text)."""
        raise NotImplementedError

    def _stopper(self, run_id: str, state: State) -> Optional[Callable[[float], None]]:
        """How to stop the pod once it runs (called under `state.lock`); None when nothing runs yet."""
        raise NotImplementedError

    def _failed(self, pod: PodLaunch, exc: Exception) -> tuple[int, str]:
        """The run's end when the executor itself failed running the pod."""
        log.exception("running pod %s failed", pod.pod_name)
        return 128, f"the executor failed to run the pod: {exc}"

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

    def shutdown(self) -> None:
        with self._lock:
            states = list(self._pods.items())
        for run_id, _ in states:
            self.kill(run_id, self.shutdown_grace_seconds)
        for _, state in states:
            if state.thread is not None:
                state.thread.join(timeout=self.shutdown_grace_seconds + 10)

    def _run(self, pod: PodLaunch, reporter: RunReporter, state: State) -> None:
        try:
            exit_code, error = self._run_pod(pod, reporter, state)
        except Exception as exc:
            exit_code, error = self._failed(pod, exc)
        try:
            reporter.finished(pod.run_id, exit_code, error)
        finally:
            with self._lock:
                self._pods.pop(pod.run_id, None)
            self._after(pod)
