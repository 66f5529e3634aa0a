"""The scheduling loop: a thread woken whenever something is submitted or a run ends (never on a timer).

Each pass first rejects what could never be scheduled (Armada checks this asynchronously after
submit), then asks the scheduler for placements and leases them; the pods are launched outside
the lock.
"""

from __future__ import annotations

import logging
import threading
from typing import Optional

from armada_client.armada import event_pb2

from armada_flyte.armada_names import JobState
from armada_flyte.cluster.error_categories import SUBCATEGORY_JOB_REJECTED, internal
from armada_flyte.embedded.control_plane.gc_freeze import GcFreezer
from armada_flyte.embedded.control_plane.plane_state import PlaneState
from armada_flyte.embedded.control_plane.run_lifecycle import RunLifecycle
from armada_flyte.embedded.store.jobs import GangKey, Job

log = logging.getLogger(__name__)


class SchedulingLoop:
    def __init__(self, state: PlaneState, runs: RunLifecycle):
        self._state = state
        self._runs = runs
        self._stopping = False
        self._thread: Optional[threading.Thread] = None
        self._gc = GcFreezer()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._schedule_forever, name="armada-scheduler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the loop after the pass under way, if any."""
        self._stopping = True
        self._state.wake.set()
        if self._thread is not None:
            self._thread.join()

    def _schedule_forever(self) -> None:
        state = self._state
        while True:
            state.wake.wait()
            if self._stopping:
                return
            state.wake.clear()
            try:
                self._schedule()
            except Exception:  # a bug in one pass must not stop scheduling for good
                log.exception("scheduling pass failed")
            self._gc.jobs_now(len(state.index.jobs))

    def _schedule(self) -> None:
        state = self._state
        with state.lock:
            self._reject_unschedulable()
            cordoned = state.queues.cordoned()
            backlogs = {queue: backlog for queue, backlog in state.backlogs.items() if queue not in cordoned}
            placements = state.scheduler.plan(backlogs, state.queues.priority_factors(), self._queued_gang)
            launches = self._runs.hold_while_paused([self._runs.lease(job, node) for job, node in placements])
        self._runs.launch(launches)

    def _reject_unschedulable(self) -> None:
        """Armada's asynchronous "can this ever be scheduled" check, for jobs and gangs not yet checked."""
        state = self._state
        for job in state.unchecked_jobs:
            if job.state != JobState.QUEUED:
                continue
            if reason := state.scheduler.rejection(job.requirements):
                self._reject(job, reason)
            else:
                job.validated = True
                state.store.job_changed(job)
        state.unchecked_jobs.clear()
        for key in state.unchecked_gangs:
            self._check_gang(key)
        state.unchecked_gangs.clear()

    def _check_gang(self, key: GangKey) -> None:
        """Reject members that can't join, and a complete gang that could never fit.

        As in Armada, only members not yet ended count: a member cancelled (or otherwise ended)
        before the gang was placed leaves it, and a member submitted later takes its place.
        Once the gang has been placed it can't be joined.
        """
        gangs = self._state.index.gangs
        live = [m for m in gangs[key] if not m.state.terminal]
        if not live:
            del gangs[key]
            return
        gangs[key] = live
        gang = live[0].gang
        assert gang is not None
        queued = [m for m in live if m.state == JobState.QUEUED]
        started = next((m for m in live if m.state != JobState.QUEUED), None)
        if started is not None:
            reason = (
                f"gang {gang.id} was already placed (member {started.id} is "
                f"{started.state.name}); it can't be joined now"
            )
            for member in queued:
                self._reject(member, reason)
            return
        for member in live[gang.cardinality :]:
            self._reject(member, f"gang {gang.id} already has its {gang.cardinality} members")
        members = live[: gang.cardinality]
        reason = self._state.scheduler.gang_rejection(members) if len(members) == gang.cardinality else None
        for member in members if reason else ():
            self._reject(member, reason)

    def _reject(self, job: Job, reason: str) -> None:
        self._state.backlogs[job.queue].discard(job)
        job.error = reason
        job.move_to(JobState.REJECTED)
        self._state.events.append(
            "failed", job, reason=reason, cause=event_pb2.Rejected, **internal(SUBCATEGORY_JOB_REJECTED)
        )

    def _queued_gang(self, job: Job) -> Optional[list[Job]]:
        assert job.gang is not None and job.gang_key is not None
        members = [m for m in self._state.index.gangs[job.gang_key] if m.state == JobState.QUEUED]
        return members if len(members) == job.gang.cardinality else None
