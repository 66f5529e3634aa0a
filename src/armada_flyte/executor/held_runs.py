"""The runs this executor holds, what it owes the scheduler about each, and the events waiting to go.

It is the pod runner's `RunReporter`: the runner's pending / running / finished become events in
an outbox, in order. A run is reported on its node until its pod is gone and every event about it
has been delivered, so a scheduler that restarts meanwhile still hears of it (Armada's executor
likewise reports a pod until it is finished and reported). Then it is reported as unassigned
until the scheduler shows it has recorded the end, by asking to cancel it (the scheduler answers
so for every reported run it knows ended, internal/scheduler/database FindInactiveRuns): the
scheduler resends the lease of any run of this executor's that is neither reported nor ended in
its database, and its database learns of an end a moment after the event is delivered. A run the
scheduler never asks about is forgotten after a while (`forget_ended`). No I/O here: the lease
loop sends the outbox and acts on the answers (kill a pod when `cancel` or `preempt` says so).
"""

from __future__ import annotations

import enum
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

from armada_client.armada import submit_pb2

from armada_flyte.cluster.error_categories import ErrorCategories
from armada_flyte.executor import run_events
from armada_flyte.executor.leases import LeasedRun, LeaseRefused, Refusal
from armada_flyte.executor.stubs import events_pb2
from armada_flyte.pod_runner import ContainerEnd, PodEnd, PodLog


class Stop(enum.Enum):
    """Why a held run's pod is being stopped; its end then reports nothing more."""

    CANCELLED = "cancelled"
    PREEMPTED = "preempted"
    RETURNED = "returned"


@dataclass
class HeldRun:
    run: LeasedRun
    log: Optional[PodLog]
    """The pod's log (None: the lease never became a pod)."""
    grace_seconds: float = 0.0
    state: int = submit_pb2.PENDING
    """The pod's phase as the node report's api.JobState."""
    stop: Optional[Stop] = None
    pod_gone: bool = False
    undelivered: int = 0
    """Events about the run queued but not yet delivered."""
    ended_at: Optional[float] = None
    """When the pod was gone and all its events delivered (the `clock`'s time)."""


@dataclass(frozen=True)
class Outgoing:
    run_id: str
    sequence: events_pb2.EventSequence


PodEnded = Callable[[LeasedRun, PodLog, PodEnd], None]


class HeldRuns:
    """The run table and outbox, safe to call from the pod runner's threads; `on_news` is called
    (outside the lock) whenever an event is queued."""

    def __init__(
        self,
        categories: ErrorCategories,
        on_news: Callable[[], None] = lambda: None,
        on_pod_end: Optional[PodEnded] = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._clock = clock
        self._categories = categories
        self._on_news = on_news
        self._on_pod_end = on_pod_end
        self._runs: dict[str, HeldRun] = {}
        self._outbox: list[Outgoing] = []
        self._lock = threading.Lock()

    # --- leases ---

    def __contains__(self, run_id: str) -> bool:
        with self._lock:
            return run_id in self._runs

    def hold(self, run: LeasedRun, log: PodLog, grace_seconds: float) -> None:
        """A lease became a pod about to be launched."""
        with self._lock:
            self._runs[run.run_id] = HeldRun(run, log, grace_seconds)

    def refuse(self, refused: LeaseRefused) -> None:
        """A lease that never became a pod: give it back, or fail it."""
        if refused.refusal is Refusal.RETURNED:
            sequence = run_events.lease_returned(refused.run, refused.message, run_attempted=False)
        else:
            unreadable = refused.refusal is Refusal.UNREADABLE
            sequence = run_events.not_created(refused.run, refused.message, unreadable)
        self._hold_podless(refused.run, sequence)

    def launch_failed(self, run_id: str, message: str) -> None:
        """The pod runner refused the pod: the lease goes back, nothing ran."""
        with self._lock:
            held = self._runs.pop(run_id, None)
        if held is not None:
            self._hold_podless(held.run, run_events.lease_returned(held.run, message, run_attempted=False))

    def _hold_podless(self, run: LeasedRun, sequence: events_pb2.EventSequence) -> None:
        """A run with no pod: held only until its end is delivered and recorded."""
        with self._lock:
            held = HeldRun(run, None, pod_gone=True, state=submit_pb2.FAILED)
            self._runs[run.run_id] = held
            self._queue(held, sequence)
        self._on_news()

    # --- the pod runner's reports (RunReporter) ---

    def pending(self, run_id: str) -> bool:
        return self._advance(run_id, submit_pb2.PENDING, run_events.assigned)

    def running(self, run_id: str) -> bool:
        return self._advance(run_id, submit_pb2.RUNNING, run_events.running)

    def _advance(self, run_id: str, state: int, sequence: Callable[[LeasedRun], events_pb2.EventSequence]) -> bool:
        with self._lock:
            held = self._runs.get(run_id)
            if held is None or held.stop is not None:
                return False
            held.state = state
            self._queue(held, sequence(held.run))
        self._on_news()
        return True

    def finished(
        self, run_id: str, exit_code: int, error: str, containers: tuple[ContainerEnd, ...] = (), reason: str = ""
    ) -> None:
        end = PodEnd(exit_code, error, containers, reason)
        with self._lock:
            held = self._runs.get(run_id)
            if held is None:
                return
            held.pod_gone = True
            queued = held.stop is None
            if queued:
                held.state = submit_pb2.SUCCEEDED if run_events.ended_well(end) else submit_pb2.FAILED
                self._queue(held, run_events.ended(held.run, end, self._categories))
            self._mark_ended_if_done(held)
        if self._on_pod_end is not None and held.log is not None:
            self._on_pod_end(held.run, held.log, end)
        if queued:
            self._on_news()

    def note(self, run_id: str, text: str) -> None:
        with self._lock:
            held = self._runs.get(run_id)
        if held is not None and held.log is not None:
            held.log.note(text)

    # --- the scheduler's asks ---

    def cancel(self, run_id: str) -> Optional[float]:
        """The scheduler cancelled the run, or has recorded its end: the grace period to kill its pod
        with, the first time it asks; None when there is nothing (more) to do. An ended run is forgotten."""
        with self._lock:
            held = self._runs.get(run_id)
            if held is not None and held.ended_at is not None:
                del self._runs[run_id]
                return None
        return self._stop(run_id, Stop.CANCELLED, None)

    def preempt(self, run_id: str) -> Optional[float]:
        """The scheduler preempts the run: its preempted events are queued; the grace period to kill
        its pod with, the first time it asks; None when there is nothing (more) to do."""
        return self._stop(run_id, Stop.PREEMPTED, run_events.preempted)

    def give_back_all(self, message: str) -> list[str]:
        """The executor is stopping: every run whose pod still runs goes back to Armada (it ran, so
        Armada counts the attempt). Their ids, to kill."""
        with self._lock:
            live = [h for h in self._runs.values() if h.stop is None and not h.pod_gone]
            for held in live:
                held.stop = Stop.RETURNED
                held.state = submit_pb2.FAILED
                self._queue(held, run_events.lease_returned(held.run, message, run_attempted=True))
        if live:
            self._on_news()
        return [h.run.run_id for h in live]

    def _stop(
        self, run_id: str, stop: Stop, sequence: Optional[Callable[[LeasedRun], events_pb2.EventSequence]]
    ) -> Optional[float]:
        with self._lock:
            held = self._runs.get(run_id)
            if held is None or held.stop is not None or held.pod_gone:
                return None
            held.stop = stop
            if sequence is not None:
                held.state = submit_pb2.FAILED
                self._queue(held, sequence(held.run))
        if sequence is not None:
            self._on_news()
        return held.grace_seconds

    # --- what the scheduler is told ---

    def runs_by_node(self) -> dict[str, dict[str, int]]:
        """Runs not yet ended by node name: run id -> api.JobState (the node report's `run_ids_by_state`)."""
        report: dict[str, dict[str, int]] = {}
        with self._lock:
            for held in self._runs.values():
                if held.ended_at is None:
                    report.setdefault(held.run.node, {})[held.run.run_id] = held.state
        return report

    def ended_run_ids(self) -> list[str]:
        """Runs ended and reported, whose end the scheduler has not yet shown it recorded (sent as unassigned)."""
        with self._lock:
            return [run_id for run_id, held in self._runs.items() if held.ended_at is not None]

    def forget_ended(self, before: float) -> None:
        """Forget runs that ended before `before` (the `clock`'s time) and the scheduler never asked about."""
        with self._lock:
            for run_id in [r for r, h in self._runs.items() if h.ended_at is not None and h.ended_at < before]:
                del self._runs[run_id]

    def live_run_ids(self) -> list[str]:
        """Runs whose pods still run."""
        with self._lock:
            return [run_id for run_id, held in self._runs.items() if not held.pod_gone]

    def take_outbox(self, limit: int) -> list[Outgoing]:
        """The oldest `limit` queued events, to send in order (give them back with `undelivered` on failure)."""
        with self._lock:
            batch, self._outbox = self._outbox[:limit], self._outbox[limit:]
            return batch

    def delivered(self, batch: Iterable[Outgoing]) -> None:
        with self._lock:
            for outgoing in batch:
                held = self._runs.get(outgoing.run_id)
                if held is not None:
                    held.undelivered -= 1
                    self._mark_ended_if_done(held)

    def undelivered(self, batch: list[Outgoing]) -> None:
        """Put a batch the scheduler did not take back in front of the outbox, to send again."""
        with self._lock:
            self._outbox[:0] = batch

    def pending_events(self) -> int:
        with self._lock:
            return len(self._outbox)

    def _queue(self, held: HeldRun, sequence: events_pb2.EventSequence) -> None:
        """Under the lock."""
        held.undelivered += 1
        self._outbox.append(Outgoing(held.run.run_id, sequence))

    def _mark_ended_if_done(self, held: HeldRun) -> None:
        """Under the lock: a run whose pod is gone and whose events are all delivered has ended."""
        if held.pod_gone and held.undelivered <= 0 and held.ended_at is None:
            held.ended_at = self._clock()
