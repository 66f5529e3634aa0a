"""The control plane's commands: submit, cancel, preempt and reprioritize jobs, and act on queues and nodes.

Each command checks the request as Armada does, changes the jobs under the plane's lock, records
the events (naming `requestor`, the user the gRPC service authenticated), then kills what must
stop and wakes the scheduling loop.
"""

from __future__ import annotations

from typing import Any, Iterable

from armada_flyte.armada_names import JobState
from armada_flyte.embedded.control_plane.plane_state import PlaneState
from armada_flyte.embedded.control_plane.run_lifecycle import RunLifecycle
from armada_flyte.embedded.model.job_request import gang_info, main_pod_spec
from armada_flyte.embedded.model.refusals import QueueNotFound, Refusal, UnknownQueue
from armada_flyte.embedded.model.requirements import Requirements
from armada_flyte.embedded.rules.defaults import apply_defaults, preemptible, priority_of
from armada_flyte.embedded.rules.job_sets import (
    cancellable_states,
    check_job_set,
    check_reason,
    job_set_key,
    unique_ids,
)
from armada_flyte.embedded.rules.submit_validation import validate_request
from armada_flyte.embedded.store.jobs import ACTIVE, Job, new_job_id

QUEUE_CANCEL_STATES = ACTIVE | {JobState.QUEUED}
"""The states CancelOnQueue accepts (`isActiveState` in internal/server/queue/queue_service.go)."""


class Commands:
    def __init__(self, state: PlaneState, runs: RunLifecycle, default_priority_class: str):
        self._state = state
        self._runs = runs
        self._default_priority_class = default_priority_class
        self._seq = 0
        """The last job's number in submission order (restored jobs' numbers count)."""

    def restored(self, job: Job) -> None:
        """A job of an earlier server on this state: later jobs are numbered after it."""
        self._seq = max(self._seq, job.seq)

    # Queues (the registry does the rest)

    def delete_queue(self, name: str) -> None:
        """Armada deletes a queue whatever its jobs are doing (`DeleteQueue` in queue_repository.go)."""
        with self._state.lock:
            self._state.queues.remove(name)

    def cordon_queue(self, name: str, cordoned: bool) -> None:
        """Cordon or uncordon: a cordoned queue's queued jobs are not scheduled (queue_repository.go,
        scheduler/scheduling/constraints/constraints.go); empty or unknown names are plain errors (UNKNOWN)."""
        if not name:
            raise Refusal(f"cannot {'cordon' if cordoned else 'uncordon'} queue with empty name")
        with self._state.lock:
            self._require_known_queue(name)
            self._state.queues.set_cordoned(name, cordoned)
        self._state.wake.set()

    def cancel_on_queue(
        self, name: str, states: Iterable[int], priority_classes: Iterable[str], *, requestor: str
    ) -> None:
        """QueueService.CancelOnQueue: the queue's jobs in `states` (active ones only; none given, none
        cancelled) and, if given, of those priority classes, with only `cancelled` events
        (queue_service.go, scheduleringester/schedulerdb.go)."""
        if not name:
            raise Refusal("cannot cancel jobs on queue with empty name")
        wanted = {JobState(s) for s in states if s in {int(x) for x in QUEUE_CANCEL_STATES}}
        if len(wanted) != len(set(states)):
            raise Refusal("provided job states must be non-terminal")
        classes = set(priority_classes)
        with self._state.lock:
            kills = []
            for job in [j for j in self._state.index.jobs.values() if j.queue == name]:
                if job.state in wanted and (not classes or job.pod.priorityClassName in classes):
                    kills += self._runs.cancel(job, "cancelled by CancelOnQueue", requestor)
                    self._state.events.append("cancelled", job, requestor=requestor)
        self._runs.kill(kills)
        self._state.wake.set()

    def preempt_on_queue(self, name: str, priority_classes: Iterable[str], *, requestor: str) -> None:
        """QueueService.PreemptOnQueue: the queue's jobs with a run, of those priority classes if given;
        the scheduler preempts the preemptible ones (preempted then failed, no preempting event)."""
        if not name:
            raise Refusal("cannot preempt jobs on queue with empty name")
        classes = set(priority_classes)
        with self._state.lock:
            kills = []
            for job in [j for j in self._state.index.jobs.values() if j.queue == name and j.state in ACTIVE]:
                if (not classes or job.pod.priorityClassName in classes) and preemptible(job.pod):
                    kills += self._runs.preempt(job, "Preempted - preemption requested via API", requestor)
        self._runs.kill(kills)
        self._state.wake.set()

    def cancel_on_node(
        self, node: str, executor: str, queues: Iterable[str], priority_classes: Iterable[str], *, requestor: str
    ) -> None:
        """Node.CancelOnNode: cancel the active jobs of `queues` (none given, none match) whose run is on
        `node` of `executor`, of those priority classes if given; only `cancelled` events follow
        (scheduleringester/schedulerdb.go CancelNode; SelectJobsByNodeAndExecutorAndQueues in query.sql)."""
        with self._state.lock:
            kills = []
            for job in self._state.index.on_node(node, executor, queues, priority_classes):
                kills += self._runs.cancel(job, "cancelled by CancelOnNode", requestor)
                self._state.events.append("cancelled", job, requestor=requestor)
        self._runs.kill(kills)
        self._state.wake.set()

    def preempt_on_node(
        self, node: str, executor: str, queues: Iterable[str], priority_classes: Iterable[str], *, requestor: str
    ) -> None:
        """Node.PreemptOnNode: the same selection as `cancel_on_node`; the scheduler preempts the
        preemptible ones (preempted then failed, no preempting event: schedulerdb.go PreemptNode)."""
        with self._state.lock:
            kills = []
            for job in self._state.index.on_node(node, executor, queues, priority_classes):
                if preemptible(job.pod):
                    kills += self._runs.preempt(job, "Preempted - preemption requested via API", requestor)
        self._runs.kill(kills)
        self._state.wake.set()

    def submit(self, request: Any, *, requestor: str) -> list[str]:
        """Job ids for the request's items, in order.

        An item whose client id an earlier request stored gets that job's id; the same client id
        twice in one request makes two jobs, as Armada checks only stored ids (submit/submit.go).
        A request with new jobs is refused while the state can't be written (`StateNotWritable`),
        as Armada refuses one whose events it can't publish; one of stored ids only is answered.
        """
        self._require_queue(request.queue)
        validate_request(request)
        prepared = []
        for item in request.job_request_items:
            stored = type(item)()
            stored.CopyFrom(item)
            stored.priority = priority_of(item.priority)
            pod = main_pod_spec(stored)
            apply_defaults(pod, self._default_priority_class)
            prepared.append((stored, pod, Requirements.of_pod(pod)))
        ids = []
        with self._state.lock:
            self._require_queue(request.queue)
            known = {
                i.client_id: self._state.index.job_with_client_id(request.queue, i.client_id) for i, _, _ in prepared
            }
            if any(not (item.client_id and known.get(item.client_id)) for item, _, _ in prepared):
                self._state.store.health.require_writable()  # a new job must not live in memory only
            added = []
            for item, pod, needs in prepared:
                original = known.get(item.client_id) if item.client_id else None
                if original:
                    ids.append(original)
                    continue
                job = self._add_job(request.queue, request.job_set_id, item, pod, needs, requestor)
                added.append(job)
                ids.append(job.id)
            self._state.events.append_sequence([(kind, job, {}) for job in added for kind in ("submitted", "queued")])
        self._state.wake.set()
        return ids

    def cancel_jobs(
        self, queue: str, job_set: str, job_ids: Iterable[str], reason: str = "", *, requestor: str
    ) -> list[str]:
        """CancelJobs: answers every id asked for (cancelling is a request); no ids cancels the job set.

        Armada's order (submit/submit.go): the reason, then (no ids) the job-set path, then the
        names, then the queue (an unknown one is UNKNOWN).
        """
        check_reason(reason)
        ids = unique_ids(job_ids)
        if not ids:
            self.cancel_job_set(queue, job_set, reason, (), requestor=requestor)
            return [""]  # what Armada answers here, in its own words "a bit nonsensical"
        check_job_set(queue, job_set)
        with self._state.lock:
            self._require_known_queue(queue)
            kills = []
            sequence = []
            for job in self._state.index.select(queue, job_set, ids):
                if not job.state.terminal:
                    sequence.append(("cancelling", job, {"requestor": requestor}))
                    kills += self._runs.cancel(job, reason, requestor)
                    sequence.append(("cancelled", job, {"requestor": requestor}))
            self._state.events.append_sequence(sequence)
        self._runs.kill(kills)
        self._state.wake.set()
        return ids

    def cancel_job_set(self, queue: str, job_set: str, reason: str, states: Iterable[int], *, requestor: str) -> None:
        """CancelJobSet: only `cancelled` events (no `cancelling`: Armada converts no event from the request)."""
        check_reason(reason)
        check_job_set(queue, job_set)
        wanted = cancellable_states(states)
        with self._state.lock:
            self._require_known_queue(queue)
            kills, sequence = [], []
            for job in self._state.index.select(queue, job_set, ()):
                if job.state in wanted:
                    kills += self._runs.cancel(job, reason, requestor)
                    sequence.append(("cancelled", job, {"requestor": requestor}))
            self._state.events.append_sequence(sequence)
        self._runs.kill(kills)
        self._state.wake.set()

    def preempt(
        self, queue: str, job_set: str, job_ids: Iterable[str], reason: str = "", *, requestor: str
    ) -> dict[str, str]:
        """PreemptJobs: queue the request and answer "" per id, as Armada does (submit/submit.go).

        The scheduler then preempts a job only when it has a run and its priority class is
        preemptible; the run ends preempting -> preempted -> failed (scheduler/scheduler.go).
        """
        check_reason(reason)
        check_job_set(queue, job_set)
        job_ids = list(job_ids)
        kills = []
        with self._state.lock:
            self._require_known_queue(queue)
            for job in self._state.index.select(queue, job_set, unique_ids(job_ids)) if job_ids else ():
                if job.state.terminal:
                    continue
                self._state.events.append("preempting", job, requestor=requestor, reason=reason)
                if job.state in ACTIVE and preemptible(job.pod):
                    kills += self._runs.preempt(job, reason or "Preempted - preemption requested via API", requestor)
        self._runs.kill(kills)
        self._state.wake.set()
        return {job_id: "" for job_id in job_ids}

    def reprioritize(
        self, queue: str, job_set: str, job_ids: Iterable[str], priority: float, *, requestor: str
    ) -> dict[str, str]:
        """ReprioritizeJobs: "" per id, or one result for the whole job set when no ids are given.

        Asking by ids gives reprioritizing then reprioritized; asking for the job set gives only
        reprioritized, under the key Armada uses (submit/submit.go).
        """
        check_job_set(queue, job_set)
        job_ids = list(job_ids)
        stored = priority_of(priority)
        with self._state.lock:
            self._require_known_queue(queue)
            for job in self._state.index.select(queue, job_set, unique_ids(job_ids)):
                if job.state.terminal:
                    continue
                if job_ids:
                    self._state.events.append("reprioritizing", job, new_priority=stored, requestor=requestor)
                job.item.priority = stored
                self._state.events.append("reprioritized", job, new_priority=stored, requestor=requestor)
            if queue in self._state.backlogs:
                self._state.backlogs[queue].resort()
        self._state.wake.set()
        if not job_ids:
            return {job_set_key(job_set): ""}
        return {job_id: "" for job_id in job_ids}

    def _add_job(self, queue: str, job_set: str, item: Any, pod: Any, needs: Requirements, requestor: str) -> Job:
        self._seq += 1
        job = Job(new_job_id(), queue, job_set, self._seq, item, pod, needs, gang_info(item.annotations))
        job.owner = requestor
        self._state.track(job)
        return job

    def _require_queue(self, queue: str) -> None:
        if queue not in self._state.queues:
            raise QueueNotFound(queue)

    def _require_known_queue(self, queue: str) -> None:
        if queue not in self._state.queues:
            raise UnknownQueue(queue)
