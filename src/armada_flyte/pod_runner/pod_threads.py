"""The thread-per-pod life both runners share: launch, kill (even before the start), deadline, shutdown."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Callable, Generic, Optional, TypeVar

from armada_flyte.pod_runner.model import (
    DEADLINE_MESSAGE,
    DEADLINE_REASON,
    PodEnd,
    PodLaunch,
    RunReporter,
    active_deadline,
    grace_seconds,
)

log = logging.getLogger(__name__)


@dataclass
class PodState:
    """One launched pod's bookkeeping; `killed` records a stop asked for before the pod started."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    killed: bool = False
    deadline_passed: bool = False
    thread: Optional[threading.Thread] = None


State = TypeVar("State", bound=PodState)


class PodThreads(Generic[State]):
    """What every pod runner shares: one thread per pod, a stop that arrives before the start is kept,
    a failure inside the runner still ends the run (or its job would hold its node forever), and
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
        """The run's end when the runner itself failed running the pod."""
        log.exception("running pod %s failed", pod.pod_name)
        return PodEnd(128, f"the pod runner failed to run the pod: {exc}")

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
            return  # never launched (the launcher won't start it now) or already over
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
