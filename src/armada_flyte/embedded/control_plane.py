"""The embedded Armada's control plane: queues, jobs and the state machine that moves them.

Every change of state happens here, under one lock, and is recorded as an event on the job's
job set. Scheduling runs on its own thread, woken whenever something is submitted or a run
ends (never on a timer), and hands leases to the executor outside the lock. The executor
reports back through the `RunReporter` methods (`pending`, `running`, `finished`, `note`).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import Any, Iterable, Optional

from armada_client.armada import event_pb2

from armada_flyte.armada_names import JobState
from armada_flyte.embedded import scheduling_reports
from armada_flyte.embedded.auth import current_user
from armada_flyte.embedded.cluster import Cluster
from armada_flyte.embedded.error_categories import (
    SUBCATEGORY_JOB_REJECTED,
    SUBCATEGORY_MAX_RUNS_EXCEEDED,
    SUBCATEGORY_POD_MISSING,
    internal,
)
from armada_flyte.embedded.events import EventLog, EventRecord
from armada_flyte.embedded.gc_freeze import GcFreezer
from armada_flyte.embedded.ingress import IngressController, ingress_host, ingress_ports
from armada_flyte.embedded.job_set_rules import (
    cancellable_states,
    check_job_set,
    check_reason,
    job_set_key,
    unique_ids,
)
from armada_flyte.embedded.jobs import Job, Run, RunState, new_job_id
from armada_flyte.embedded.messages import failure_event_fields, pod_event_fields
from armada_flyte.embedded.pod_metadata import injected_env, pod_annotations, pod_labels
from armada_flyte.embedded.queues import QueueRegistry
from armada_flyte.embedded.records import event_fields, job_from_row
from armada_flyte.embedded.refusals import QueueNotFound, Refusal, UnknownQueue
from armada_flyte.embedded.requirements import Requirements
from armada_flyte.embedded.retries import MAX_ATTEMPTED_RUNS, POD_MISSING, give_up_message
from armada_flyte.embedded.scheduler import Backlog, Scheduler
from armada_flyte.embedded.secrets import WAITING_REASON, SecretStore, SecretUnavailable, resolve_pod_secrets
from armada_flyte.embedded.server_defaults import DEFAULT_PRIORITY_CLASS, apply_defaults, preemptible, priority_of
from armada_flyte.embedded.state_store import EphemeralStore, SavedState, StateStore
from armada_flyte.embedded.validation import EXTERNAL_JOB_URI, gang_info, main_pod_spec, validate_request
from armada_flyte.pod_runner.model import ContainerEnd, PodLaunch, PodRunner, grace_seconds

log = logging.getLogger(__name__)


ACTIVE = frozenset({JobState.LEASED, JobState.PENDING, JobState.RUNNING})
QUEUE_CANCEL_STATES = ACTIVE | {JobState.QUEUED}
"""The states CancelOnQueue accepts (`isActiveState` in internal/server/queue/queue_service.go)."""
GangKey = tuple[str, str, str]


class ControlPlane:
    """Queues, jobs, runs and their events; the scheduler and the executor do their work through it."""

    def __init__(
        self,
        cluster: Cluster,
        executor: PodRunner,
        *,
        visibility_delay: float = 0.0,
        paused: bool = False,
        secrets: Optional[SecretStore] = None,
        default_priority_class: str = DEFAULT_PRIORITY_CLASS,
        store: Optional[StateStore] = None,
        ingress: Optional[IngressController] = None,
    ):
        self.cluster = cluster
        self.ingress = ingress
        """Routes the hosts of running jobs' ingresses to their pods; None: ingress info is still sent."""
        self.default_priority_class = default_priority_class
        self.executor = executor
        self.secrets = secrets if secrets is not None else SecretStore()
        self.visibility_delay = visibility_delay
        self.store = store if store is not None else EphemeralStore()
        self.scheduler = Scheduler(cluster)
        self._lock = threading.RLock()
        self.store.attach(self._lock)
        saved = self.store.load()
        self.events = EventLog(self.store)
        self.queues = QueueRegistry(self.store, tuple(saved.queues))
        self._backlogs: dict[str, Backlog] = {}
        self._jobs: dict[str, Job] = {}
        self._job_sets: dict[tuple[str, str], list[Job]] = {}
        self._runs: dict[str, Run] = {}
        self._by_client_id: dict[tuple[str, str], str] = {}
        self._by_external_uri: dict[tuple[str, str, str], str] = {}
        self._gangs: dict[GangKey, list[Job]] = {}
        self._requirements: dict[Requirements, Requirements] = {}
        self._unchecked_jobs: list[Job] = []
        self._unchecked_gangs: dict[GangKey, None] = {}  # an ordered set
        self._seq = 0
        self._paused = paused
        self._held: dict[str, PodLaunch] = {}
        self._wake = threading.Event()
        self._stopping = False
        self._thread: Optional[threading.Thread] = None
        self._gc = GcFreezer()
        self._restore(saved)

    # Lifecycle

    def start(self) -> None:
        self._thread = threading.Thread(target=self._schedule_forever, name="armada-scheduler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop scheduling, end every watch, and kill every pod still running."""
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        self.events.close()
        # The store is closed before the pods are killed: what their deaths do to their jobs is decided
        # at the next start (as after a kill -9), not by the exit codes of pods killed at stop.
        self.store.close()
        self.executor.shutdown()

    def pause(self) -> None:
        """Leases stay LEASED until `resume`, as if the executor had stopped pulling work."""
        with self._lock:
            self._paused = True

    def resume(self) -> None:
        with self._lock:
            self._paused = False
            launches = list(self._held.values())
            self._held.clear()
        self._launch(launches)

    # Queues (the registry does the rest)

    def delete_queue(self, name: str) -> None:
        """Armada deletes a queue whatever its jobs are doing (`DeleteQueue` in queue_repository.go)."""
        with self._lock:
            self.queues.remove(name)

    def cordon_queue(self, name: str, cordoned: bool) -> None:
        """Cordon or uncordon: a cordoned queue's queued jobs are not scheduled (queue_repository.go,
        scheduler/scheduling/constraints/constraints.go); empty or unknown names are plain errors (UNKNOWN)."""
        if not name:
            raise Refusal(f"cannot {'cordon' if cordoned else 'uncordon'} queue with empty name")
        with self._lock:
            self._require_known_queue(name)
            self.queues.set_cordoned(name, cordoned)
        self._wake.set()

    def cancel_on_queue(self, name: str, states: Iterable[int], priority_classes: Iterable[str]) -> None:
        """QueueService.CancelOnQueue: the queue's jobs in `states` (active ones only; none given, none
        cancelled) and, if given, of those priority classes, with only `cancelled` events
        (queue_service.go, scheduleringester/schedulerdb.go)."""
        if not name:
            raise Refusal("cannot cancel jobs on queue with empty name")
        wanted = {JobState(s) for s in states if s in {int(x) for x in QUEUE_CANCEL_STATES}}
        if len(wanted) != len(set(states)):
            raise Refusal("provided job states must be non-terminal")
        classes = set(priority_classes)
        with self._lock:
            kills = []
            for job in [j for j in self._jobs.values() if j.queue == name]:
                if job.state in wanted and (not classes or job.pod.priorityClassName in classes):
                    kills += self._cancel(job, "cancelled by CancelOnQueue")
                    self.events.append("cancelled", job, requestor=current_user())
        self._kill(kills)
        self._wake.set()

    def preempt_on_queue(self, name: str, priority_classes: Iterable[str]) -> None:
        """QueueService.PreemptOnQueue: the queue's jobs with a run, of those priority classes if given;
        the scheduler preempts the preemptible ones (preempted then failed, no preempting event)."""
        if not name:
            raise Refusal("cannot preempt jobs on queue with empty name")
        classes = set(priority_classes)
        with self._lock:
            kills = []
            for job in [j for j in self._jobs.values() if j.queue == name and j.state in ACTIVE]:
                if (not classes or job.pod.priorityClassName in classes) and preemptible(job.pod):
                    kills += self._preempt(job, "Preempted - preemption requested via API")
        self._kill(kills)
        self._wake.set()

    def cancel_on_node(self, node: str, executor: str, queues: Iterable[str], priority_classes: Iterable[str]) -> None:
        """Node.CancelOnNode: cancel the active jobs of `queues` (none given, none match) whose run is on
        `node` of `executor`, of those priority classes if given; only `cancelled` events follow
        (scheduleringester/schedulerdb.go CancelNode; SelectJobsByNodeAndExecutorAndQueues in query.sql)."""
        with self._lock:
            kills = []
            for job in self._on_node(node, executor, queues, priority_classes):
                kills += self._cancel(job, "cancelled by CancelOnNode")
                self.events.append("cancelled", job, requestor=current_user())
        self._kill(kills)
        self._wake.set()

    def preempt_on_node(self, node: str, executor: str, queues: Iterable[str], priority_classes: Iterable[str]) -> None:
        """Node.PreemptOnNode: the same selection as `cancel_on_node`; the scheduler preempts the
        preemptible ones (preempted then failed, no preempting event: schedulerdb.go PreemptNode)."""
        with self._lock:
            kills = []
            for job in self._on_node(node, executor, queues, priority_classes):
                if preemptible(job.pod):
                    kills += self._preempt(job, "Preempted - preemption requested via API")
        self._kill(kills)
        self._wake.set()

    def active_queues(self) -> dict[str, list[str]]:
        """Jobs.GetActiveQueues: per pool, the queues with leased, pending or running jobs
        (`GetActiveQueuesByPool` in internal/server/queryapi/database/query.sql)."""
        with self._lock:
            queues = sorted({job.queue for job in self._jobs.values() if job.state in ACTIVE})
        return {self.cluster.pool: queues} if queues else {}

    # Submission and control

    def submit(self, request: Any) -> list[str]:
        """Job ids for the request's items, in order.

        An item whose client id an earlier request stored gets that job's id; the same client id
        twice in one request makes two jobs, as Armada checks only stored ids (submit/submit.go).
        """
        self._require_queue(request.queue)
        validate_request(request)
        prepared = []
        for item in request.job_request_items:
            stored = type(item)()
            stored.CopyFrom(item)
            stored.priority = priority_of(item.priority)
            pod = main_pod_spec(stored)
            apply_defaults(pod, self.default_priority_class)
            prepared.append((stored, pod, Requirements.of_pod(pod)))
        ids = []
        with self._lock:
            self._require_queue(request.queue)
            known = {i.client_id: self._by_client_id.get((request.queue, i.client_id)) for i, _, _ in prepared}
            added = []
            for item, pod, needs in prepared:
                original = known.get(item.client_id) if item.client_id else None
                if original:
                    ids.append(original)
                    continue
                job = self._add_job(request.queue, request.job_set_id, item, pod, needs)
                added.append(job)
                ids.append(job.id)
            self.events.append_sequence([(kind, job, {}) for job in added for kind in ("submitted", "queued")])
        self._wake.set()
        return ids

    def cancel_jobs(self, queue: str, job_set: str, job_ids: Iterable[str], reason: str = "") -> list[str]:
        """CancelJobs: answers every id asked for (cancelling is a request); no ids cancels the job set.

        Armada's order (submit/submit.go): the reason, then (no ids) the job-set path, then the
        names, then the queue (an unknown one is UNKNOWN).
        """
        check_reason(reason)
        ids = unique_ids(job_ids)
        if not ids:
            self.cancel_job_set(queue, job_set, reason, ())
            return [""]  # what Armada answers here, in its own words "a bit nonsensical"
        check_job_set(queue, job_set)
        with self._lock:
            self._require_known_queue(queue)
            kills = []
            sequence = []
            for job in self._select(queue, job_set, ids):
                if not job.state.terminal:
                    sequence.append(("cancelling", job, {"requestor": current_user()}))
                    kills += self._cancel(job, reason)
                    sequence.append(("cancelled", job, {"requestor": current_user()}))
            self.events.append_sequence(sequence)
        self._kill(kills)
        self._wake.set()
        return ids

    def cancel_job_set(self, queue: str, job_set: str, reason: str, states: Iterable[int]) -> None:
        """CancelJobSet: only `cancelled` events (no `cancelling`: Armada converts no event from the request)."""
        check_reason(reason)
        check_job_set(queue, job_set)
        wanted = cancellable_states(states)
        with self._lock:
            self._require_known_queue(queue)
            kills, sequence = [], []
            for job in self._select(queue, job_set, ()):
                if job.state in wanted:
                    kills += self._cancel(job, reason)
                    sequence.append(("cancelled", job, {"requestor": current_user()}))
            self.events.append_sequence(sequence)
        self._kill(kills)
        self._wake.set()

    def preempt(self, queue: str, job_set: str, job_ids: Iterable[str], reason: str = "") -> dict[str, str]:
        """PreemptJobs: queue the request and answer "" per id, as Armada does (submit/submit.go).

        The scheduler then preempts a job only when it has a run and its priority class is
        preemptible; the run ends preempting -> preempted -> failed (scheduler/scheduler.go).
        """
        check_reason(reason)
        check_job_set(queue, job_set)
        job_ids = list(job_ids)
        kills = []
        with self._lock:
            self._require_known_queue(queue)
            for job in self._select(queue, job_set, unique_ids(job_ids)) if job_ids else ():
                if job.state.terminal:
                    continue
                self.events.append("preempting", job, requestor=current_user(), reason=reason)
                if job.state in ACTIVE and preemptible(job.pod):
                    kills += self._preempt(job, reason or "Preempted - preemption requested via API")
        self._kill(kills)
        self._wake.set()
        return {job_id: "" for job_id in job_ids}

    def reprioritize(self, queue: str, job_set: str, job_ids: Iterable[str], priority: float) -> dict[str, str]:
        """ReprioritizeJobs: "" per id, or one result for the whole job set when no ids are given.

        Asking by ids gives reprioritizing then reprioritized; asking for the job set gives only
        reprioritized, under the key Armada uses (submit/submit.go).
        """
        check_job_set(queue, job_set)
        job_ids = list(job_ids)
        stored = priority_of(priority)
        with self._lock:
            self._require_known_queue(queue)
            for job in self._select(queue, job_set, unique_ids(job_ids)):
                if job.state.terminal:
                    continue
                if job_ids:
                    self.events.append("reprioritizing", job, new_priority=stored, requestor=current_user())
                job.item.priority = stored
                self.events.append("reprioritized", job, new_priority=stored, requestor=current_user())
            if queue in self._backlogs:
                self._backlogs[queue].resort()
        self._wake.set()
        if not job_ids:
            return {job_set_key(job_set): ""}
        return {job_id: "" for job_id in job_ids}

    def return_lease(self, run_id: str, message: str, run_attempted: bool) -> None:
        """A run given back for a system reason: requeue the job, or fail it once its attempts are spent.

        As Armada's scheduler does (scheduler/scheduler.go): only attempted runs count, and a job
        is retried while it has had fewer than MAX_ATTEMPTED_RUNS of them.
        """
        kills = []
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or run.job.state.terminal or run.job.latest_run is not run:
                return
            job = run.job
            run.attempted = run_attempted
            run.error = message
            kills += self._lose(run)
            self.events.append(
                "lease_returned",
                job,
                cluster_id=run.node.executor,
                reason=message,
                kubernetes_id=run.id,
                pod_number=0,
                run_attempted=run_attempted,
            )
            attempts = sum(1 for r in job.runs if r.attempted)
            if attempts < MAX_ATTEMPTED_RUNS:
                job.move_to(JobState.QUEUED)
                self._backlogs.setdefault(job.queue, Backlog()).add(job)
            else:
                job.error = give_up_message(message)
                job.move_to(JobState.FAILED)
                self.events.append("failed", job, reason=job.error, **internal(SUBCATEGORY_MAX_RUNS_EXCEEDED))
            run.state = RunState.LEASE_RETURNED
        self._kill(kills)
        self._wake.set()

    def lose_pods(self) -> None:
        """What an executor restart does to the pods it had, as Armada's executor reports them
        (internal/executor/service/pod_issue_handler.go): a running pod that vanished fails the
        job; a pod still starting is a retryable issue, its lease returned."""
        with self._lock:
            runs = [job.latest_run for job in self._jobs.values() if job.state in ACTIVE and job.latest_run]
        for run in runs:
            if run.job.state == JobState.RUNNING:
                self._pod_missing(run)
            else:
                self.return_lease(run.id, POD_MISSING, run_attempted=run.job.state == JobState.PENDING)

    def _pod_missing(self, run: Run) -> None:
        with self._lock:
            job = run.job
            if job.state.terminal or job.latest_run is not run:
                return
            kills = self._lose(run)
            run.error = job.error = POD_MISSING
            job.move_to(JobState.FAILED)
            self.events.append("failed", job, reason=POD_MISSING, **internal(SUBCATEGORY_POD_MISSING))
        self._kill(kills)
        self._wake.set()

    def _lose(self, run: Run) -> list[tuple[str, float]]:
        """Stop the run's pod without waiting for its report (which no longer counts) and free its node."""
        kills = self._stop_run(run.job)
        run.lost = True
        run.finished_at = run.finished_at or time.time()
        self._release(run)
        return kills

    # Queries

    def all_jobs(self) -> list[Job]:
        """Every job the server knows, in submission order (a copy of the list, for read-only views)."""
        with self._lock:
            return list(self._jobs.values())

    def find_job(self, job_id: str) -> Optional[Job]:
        """The job, ingested or not (for callers beside the server, not the Jobs API)."""
        return self._jobs.get(job_id)

    def visible_job(self, job_id: str) -> Optional[Job]:
        """The job, once the query side would have ingested it (after `visibility_delay`), else None."""
        job = self._jobs.get(job_id)
        if job is None or time.time() - job.submitted_at < self.visibility_delay:
            return None
        return job

    def states(self, job_ids: Iterable[str]) -> dict[str, int]:
        """Without the lock, so status reads never wait on a scheduling pass: a job's state is one
        attribute, replaced whole, so each read sees a state the job really had. (`visible_job`'s rule,
        with the clock read once: this runs on the server's event loop.)"""
        jobs, unknown = self._jobs, int(JobState.UNKNOWN)
        if self.visibility_delay <= 0:
            return {i: int(job.state) if (job := jobs.get(i)) is not None else unknown for i in job_ids}
        now = time.time()
        return {
            i: int(job.state)
            if (job := jobs.get(i)) is not None and now - job.submitted_at >= self.visibility_delay
            else unknown
            for i in job_ids
        }

    def errors(self, job_ids: Iterable[str]) -> dict[str, str]:
        with self._lock:
            return {i: _error_of(job) for i in job_ids if (job := self.visible_job(i))}

    def jobs(self, job_ids: Iterable[str]) -> list[Job]:
        with self._lock:
            return [job for i in job_ids if (job := self.visible_job(i))]

    def runs(self, run_ids: Iterable[str]) -> list[Run]:
        with self._lock:
            return [self._runs[i] for i in run_ids if i in self._runs]

    def job_by_external_uri(self, queue: str, job_set: str, uri: str) -> Optional[Job]:
        with self._lock:
            job_id = self._by_external_uri.get((queue, job_set, uri))
            return self.visible_job(job_id) if job_id else None

    def job_report(self, job_id: str) -> str:
        """Armada's GetJobReport text: why the job (if visible and queued) is not scheduled yet."""
        with self._lock:
            return scheduling_reports.job_report(self.cluster, self.scheduler.free, job_id, self.visible_job(job_id))

    def queue_report(self, queue: str) -> str:
        """Armada's GetQueueReport text: what the queue holds and how many of its jobs wait."""
        with self._lock:
            backlog = self._backlogs.get(queue)
            waiting = [job for job in backlog.ordered() if job.state == JobState.QUEUED] if backlog else []
            usage = dict(self.scheduler.usage.get(queue, {}))
            return scheduling_reports.queue_report(self.cluster, queue, usage, waiting)

    def round_report(self) -> str:
        """Armada's GetSchedulingReport text (unfiltered): the queues now holding resources."""
        with self._lock:
            holding = sorted(queue for queue, used in self.scheduler.usage.items() if any(used.values()))
            return f"{self.cluster.pool}:\n\tMost recent scheduling round:\n\t\tScheduled queues: {holding}\n"

    def lock(self) -> threading.RLock:
        """Hold it to read several jobs consistently (e.g. while building messages from them)."""
        return self._lock

    # RunReporter: called by the executor

    def pending(self, run_id: str) -> bool:
        return self._advance(run_id, JobState.PENDING)

    def running(self, run_id: str) -> bool:
        return self._advance(run_id, JobState.RUNNING)

    def finished(
        self, run_id: str, exit_code: int, error: str, containers: tuple[ContainerEnd, ...] = (), reason: str = ""
    ) -> None:
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or run.lost:
                return
            run.exit_code = exit_code
            run.containers, run.pod_reason = containers, reason
            run.finished_at = run.finished_at or time.time()
            self._release(run)
            job = run.job
            self.store.job_changed(job)  # the run's end and its log, even when the job had ended already
            if not job.state.terminal and job.latest_run is run:
                if exit_code == 0 and not reason:
                    job.move_to(JobState.SUCCEEDED)
                    self.events.append("succeeded", job, **pod_event_fields(run))
                else:
                    job.move_to(JobState.FAILED)
                    fields = failure_event_fields(run, exit_code, error, self.cluster.error_categories)
                    run.error = fields["reason"]
                    self.events.append("failed", job, **fields)
        self._wake.set()

    def note(self, run_id: str, text: str) -> None:
        with self._lock:
            run = self._runs.get(run_id)
            if run is not None:
                run.note = f"{run.note}\n{text}" if run.note else text
                run.log.note(text)
                self.store.job_changed(run.job)

    # Internals

    def _require_queue(self, queue: str) -> None:
        if queue not in self.queues:
            raise QueueNotFound(queue)

    def _require_known_queue(self, queue: str) -> None:
        if queue not in self.queues:
            raise UnknownQueue(queue)

    def _on_node(self, node: str, executor: str, queues: Iterable[str], priority_classes: Iterable[str]) -> list[Job]:
        wanted_queues, classes = set(queues), set(priority_classes)
        return [
            job
            for job in self._jobs.values()
            if job.state in ACTIVE
            and job.queue in wanted_queues
            and (run := job.latest_run) is not None
            and run.node.name == node
            and run.node.executor == executor
            and (not classes or job.pod.priorityClassName in classes)
        ]

    def _cancel(self, job: Job, reason: str) -> list[tuple[str, float]]:
        job.cancel_reason, job.cancelled_at = reason or "cancelled by user", time.time()
        job.cancel_user = current_user()
        self._backlogs[job.queue].discard(job)
        job.move_to(JobState.CANCELLED)
        return self._stop_run(job)

    def _preempt(self, job: Job, reason: str) -> list[tuple[str, float]]:
        run = job.latest_run
        assert run is not None
        run.error = job.error = reason
        job.move_to(JobState.PREEMPTED)
        self.events.append_sequence(
            [
                ("preempted", job, {"run_id": run.id, "reason": reason, "requestor": current_user()}),
                ("failed", job, {"reason": reason}),
            ]
        )
        return self._stop_run(job)

    def _add_job(self, queue: str, job_set: str, item: Any, pod: Any, needs: Requirements) -> Job:
        self._seq += 1
        job = Job(new_job_id(), queue, job_set, self._seq, item, pod, needs, gang_info(item.annotations))
        job.owner = current_user()
        self._index(job)
        return job

    def _index(self, job: Job) -> None:
        """Make the job findable (by id, job set, client id, external URI) and queue it if it waits."""
        item = job.item
        job.requirements = self._requirements.setdefault(job.requirements, job.requirements)  # equal ones share
        self._jobs[job.id] = job
        self._job_sets.setdefault((job.queue, job.job_set), []).append(job)
        if item.client_id:
            self._by_client_id[(job.queue, item.client_id)] = job.id
        uri = item.external_job_uri or item.annotations.get(EXTERNAL_JOB_URI, "")
        if uri:
            self._by_external_uri[(job.queue, job.job_set, uri)] = job.id
        for run in job.runs:
            self._runs[run.id] = run
        if job.state.terminal:
            return
        if job.gang_key is not None:  # members with a run too: a returned lease puts them back in the queue
            self._gangs.setdefault(job.gang_key, []).append(job)
            self._unchecked_gangs[job.gang_key] = None
        if job.state == JobState.QUEUED:
            self._backlogs.setdefault(job.queue, Backlog()).add(job)
            if job.gang_key is None:
                self._unchecked_jobs.append(job)

    def _restore(self, saved: SavedState) -> None:
        """The jobs and events of an earlier server on this state, then what its death did to their pods.

        Pods die with the server, so a restart is an executor that lost its pods: each job that had
        a pod ends as Armada ends it (`lose_pods`): running ones fail, starting ones are retried."""
        if not saved.jobs:
            return
        with self._lock:
            for row in saved.jobs:
                job = job_from_row(row, self.cluster, self.store.read_log)
                self._seq = max(self._seq, job.seq)
                self._index(job)
                run = job.latest_run
                if job.state in ACTIVE and run is not None and run.finished_at is None and run.node.index >= 0:
                    run.holds_capacity = True
                    self.scheduler.reserve(job, run.node.index)
            streams: dict[tuple[str, str], list] = {}
            for event in saved.events:
                job = self._jobs.get(event.job_id)
                if job is not None:
                    record = EventRecord(event.kind, job, event.created, event_fields(event.kind, event.fields))
                    entry = ((event.ms, event.seq, event.subseq), event.last, record)
                    streams.setdefault((event.queue, event.job_set), []).append(entry)
            for (queue, job_set), entries in streams.items():
                self.events.restore(queue, job_set, entries)
        self.lose_pods()

    def _select(self, queue: str, job_set: str, job_ids: Iterable[str]) -> list[Job]:
        job_ids = list(job_ids)
        if not job_ids:
            return list(self._job_sets.get((queue, job_set), ()))
        jobs = (self._jobs.get(i) for i in job_ids)
        return [j for j in jobs if j is not None and j.queue == queue and j.job_set == job_set]

    def _schedule_forever(self) -> None:
        while True:
            self._wake.wait()
            if self._stopping:
                return
            self._wake.clear()
            try:
                self._schedule()
            except Exception:  # a bug in one pass must not stop scheduling for good
                log.exception("scheduling pass failed")
            self._gc.jobs_now(len(self._jobs))

    def _schedule(self) -> None:
        with self._lock:
            self._reject_unschedulable()
            cordoned = self.queues.cordoned()
            backlogs = {queue: backlog for queue, backlog in self._backlogs.items() if queue not in cordoned}
            placements = self.scheduler.plan(backlogs, self.queues.priority_factors(), self._queued_gang)
            launches = [self._lease(job, node) for job, node in placements]
            if self._paused:
                self._held.update((launch.run_id, launch) for launch in launches)
                launches = []
        self._launch(launches)

    def _reject_unschedulable(self) -> None:
        """Armada's asynchronous "can this ever be scheduled" check, for jobs and gangs not yet checked."""
        for job in self._unchecked_jobs:
            if job.state == JobState.QUEUED and (reason := self.scheduler.rejection(job.requirements)):
                self._reject(job, reason)
        self._unchecked_jobs.clear()
        for key in self._unchecked_gangs:
            self._check_gang(key)
        self._unchecked_gangs.clear()

    def _check_gang(self, key: GangKey) -> None:
        """Reject members that can't join, and a complete gang that could never fit.

        As in Armada, only members not yet ended count: a member cancelled (or otherwise ended)
        before the gang was placed leaves it, and a member submitted later takes its place.
        Once the gang has been placed it can't be joined.
        """
        live = [m for m in self._gangs[key] if not m.state.terminal]
        if not live:
            del self._gangs[key]
            return
        self._gangs[key] = live
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
        reason = self.scheduler.gang_rejection(members) if len(members) == gang.cardinality else None
        for member in members if reason else ():
            self._reject(member, reason)

    def _reject(self, job: Job, reason: str) -> None:
        self._backlogs[job.queue].discard(job)
        job.error = reason
        job.move_to(JobState.REJECTED)
        self.events.append("failed", job, reason=reason, cause=event_pb2.Rejected, **internal(SUBCATEGORY_JOB_REJECTED))

    def _queued_gang(self, job: Job) -> Optional[list[Job]]:
        assert job.gang is not None and job.gang_key is not None
        members = [m for m in self._gangs[job.gang_key] if m.state == JobState.QUEUED]
        return members if len(members) == job.gang.cardinality else None

    def _lease(self, job: Job, node_index: int) -> PodLaunch:
        node = self.cluster.nodes[node_index]
        run = Run(job, node)
        job.runs.append(run)
        self._runs[run.id] = run
        self._backlogs[job.queue].discard(job)
        job.move_to(JobState.LEASED)
        self.events.append("leased", job, cluster_id=node.executor, pool=self.cluster.pool)
        group = node.group
        item = job.item
        return PodLaunch(
            run.id,
            job.id,
            run.pod_name,
            job.namespace,
            node.name,
            group.name,
            group.architecture,
            job.pod,
            run.log,
            labels=pod_labels(item.labels, job.id, run.id, job.queue),
            annotations=pod_annotations(item.annotations, job.job_set, job.owner),
            injected_env=injected_env(job.id, job.queue, job.job_set, item.annotations),
        )

    def _launch(self, launches: list[PodLaunch]) -> None:
        """Hand the pods to the executor; a pod it can't take fails alone, and its node is free again.

        The pod's Secret references are resolved first, as the kubelet does before it creates the
        container; a pod whose Secret is missing never starts."""
        for launch in launches:
            if not self.cluster.has_namespace(launch.namespace):
                # Armada's executor treats this Kubernetes refusal as fatal: the run fails, no retry
                # (`fatalPodSubmissionErrors` in config/executor/config.yaml).
                self.finished(
                    launch.run_id, 0, f'namespaces "{launch.namespace}" not found', reason="PodCreationFailed"
                )
                continue
            try:
                resolved = resolve_pod_secrets(launch.pod, self.secrets, launch.namespace)
            except SecretUnavailable as exc:
                self._cannot_start(launch, str(exc))
                continue
            try:
                self.executor.launch(dataclasses.replace(launch, secrets=resolved), self)
            except Exception as exc:
                log.exception("the executor failed to launch pod %s", launch.pod_name)
                self.finished(launch.run_id, 128, f"executor failed to launch the pod: {exc}")

    def _cannot_start(self, launch: PodLaunch, reason: str) -> None:
        """The pod was created but its container can't be (a missing Secret): it fails without running.

        Real Armada leaves such a pod waiting, then gives up on it after its pending-pod checks'
        grace period (executor config `pendingPodChecks`, 5 minutes by default); here it fails at once.
        """
        if not self.pending(launch.run_id):
            return
        container = launch.container.name
        error = (
            f"Unable to start pod.\nContainer {container} is in state Waiting with reason {WAITING_REASON}: {reason}"
        )
        launch.log.note(error)
        with self._lock:
            run = self._runs.get(launch.run_id)
            if run is None:
                return
            run.finished_at = time.time()
            run.error = error
            self._release(run)
            job = run.job
            if not job.state.terminal and job.latest_run is run:
                job.move_to(JobState.FAILED)
                # A pod issue the executor saw itself: classified by its message (`ClassifyPodError` in
                # internal/executor/service/pod_issue_handler.go).
                classification = self.cluster.error_categories.classify((), "", error)
                run.error = error = classification.with_hint(error)
                status = event_pb2.ContainerStatus(
                    name=container, message=reason, reason=WAITING_REASON, cause=event_pb2.Error
                )
                self.events.append(
                    "failed",
                    job,
                    **pod_event_fields(run),
                    reason=error,
                    container_statuses=[status],
                    cause=event_pb2.Error,
                    **classification.event_fields(),
                )
        self._wake.set()

    def _advance(self, run_id: str, state: JobState) -> bool:
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or run.job.state.terminal or run.job.latest_run is not run:
                return False
            now = time.time()
            pool = self.cluster.pool
            if state == JobState.PENDING:
                run.pending_at = now
                self.events.append("pending", run.job, pool=pool, **pod_event_fields(run, with_node=False))
            else:
                run.started_at = now
                self.events.append("running", run.job, pool=pool, **pod_event_fields(run))
            run.job.move_to(state, now)
            if state == JobState.RUNNING:
                self._report_ingress(run)
            return True

    def _report_ingress(self, run: Run) -> None:
        """A running pod with ingresses: Armada's executor sends their hosts once the pod runs
        (`attemptToReportIngressInfoEvent` in internal/executor/service/job_state_reporter.go)."""
        ports = ingress_ports(run.job.item, run.job.pod)
        if not ports:
            return
        addresses = {port: ingress_host(name, port, run.pod_name, run.job.namespace) for name, port in ports}
        run.ingress_hosts = tuple(addresses.items())
        if self.ingress is not None:
            for port, host in run.ingress_hosts:
                self.ingress.add(host, port)
        self.events.append("ingress_info", run.job, **pod_event_fields(run), ingress_addresses=addresses)

    def _stop_run(self, job: Job) -> list[tuple[str, float]]:
        """What must be killed to stop the job's run; a run the executor never got just gives its capacity back."""
        run = job.latest_run
        if run is None or run.finished_at is not None:
            return []
        held = self._held.pop(run.id, None)
        if held is not None:
            run.finished_at = time.time()
            self._release(run)
            return []
        return [(run.id, grace_seconds(job.pod))]

    def _kill(self, kills: list[tuple[str, float]]) -> None:
        for run_id, grace in kills:
            self.executor.kill(run_id, grace)

    def _release(self, run: Run) -> None:
        if self.ingress is not None:
            for _, host in run.ingress_hosts:
                self.ingress.remove(host)
        if run.holds_capacity:
            run.holds_capacity = False
            self.scheduler.release(run.job, run.node.index)


def _error_of(job: Job) -> str:
    """Armada's rule: the job's own error, else its latest run's."""
    run = job.latest_run
    return job.error or (run.error if run else "")
