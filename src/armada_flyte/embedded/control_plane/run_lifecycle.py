"""The life of a run: leased, handed to the pod runner, pending, running, and ended by the pod, a kill or a loss.

The pod runner reports back through the `RunReporter` methods (`pending`, `running`, `finished`,
`note`); commands end runs through `cancel`, `preempt` and `return_lease`. Every change happens
under the plane's lock and is recorded as an event on the job's job set; pods are launched and
killed outside it.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Optional

from armada_client.armada import event_pb2

from armada_flyte.armada_names import JobState
from armada_flyte.cluster.error_categories import (
    SUBCATEGORY_MAX_RUNS_EXCEEDED,
    SUBCATEGORY_POD_MISSING,
    internal,
)
from armada_flyte.cluster.ingress import IngressController, ingress_host, ingress_ports
from armada_flyte.cluster.pod_metadata import injected_env, pod_annotations, pod_labels
from armada_flyte.cluster.secrets import WAITING_REASON, SecretStore, SecretUnavailable, resolve_pod_secrets
from armada_flyte.embedded.control_plane.plane_state import PlaneState
from armada_flyte.embedded.control_plane.run_events import failure_event_fields, pod_event_fields
from armada_flyte.embedded.rules.retries import MAX_ATTEMPTED_RUNS, POD_MISSING, give_up_message
from armada_flyte.embedded.store.jobs import ACTIVE, Job, Run, RunState
from armada_flyte.pod_runner.model import ContainerEnd, PodLaunch, PodRunner, grace_seconds

log = logging.getLogger(__name__)

Kill = tuple[str, float]
"""(run id, grace seconds): a pod to kill once the lock is let go."""


class RunLifecycle:
    """Moves runs through their states; the `RunReporter` the pod runner reports to."""

    def __init__(
        self,
        state: PlaneState,
        pod_runner: PodRunner,
        secrets: SecretStore,
        ingress: Optional[IngressController],
        paused: bool,
    ):
        self._state = state
        self.pod_runner = pod_runner
        self._secrets = secrets
        self._ingress = ingress
        """Routes the hosts of running jobs' ingresses to their pods; None: ingress info is still sent."""
        self._paused = paused
        self._held: dict[str, PodLaunch] = {}

    def pause(self) -> None:
        """Leases stay LEASED until `resume`, as if the executor had stopped pulling work."""
        with self._state.lock:
            self._paused = True

    def resume(self) -> None:
        with self._state.lock:
            self._paused = False
            launches = list(self._held.values())
            self._held.clear()
        self.launch(launches)

    # Leasing and launching

    def lease(self, job: Job, node_index: int) -> PodLaunch:
        """Under the lock: a run of `job` on the node, and the pod to launch for it."""
        state = self._state
        node = state.cluster.nodes[node_index]
        run = Run(job, node)
        job.runs.append(run)
        state.index.runs[run.id] = run
        state.backlogs[job.queue].discard(job)
        job.move_to(JobState.LEASED)
        state.events.append("leased", job, cluster_id=node.executor, pool=state.cluster.pool)
        group = node.node_set
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

    def hold_while_paused(self, launches: list[PodLaunch]) -> list[PodLaunch]:
        """Under the lock: the launches to make now; while paused, none (they wait for `resume`)."""
        if not self._paused:
            return launches
        self._held.update((launch.run_id, launch) for launch in launches)
        return []

    def launch(self, launches: list[PodLaunch]) -> None:
        """Hand the pods to the executor; a pod it can't take fails alone, and its node is free again.

        The pod's Secret references are resolved first, as the kubelet does before it creates the
        container; a pod whose Secret is missing never starts."""
        for launch in launches:
            if not self._state.cluster.has_namespace(launch.namespace):
                # Armada's executor treats this Kubernetes refusal as fatal: the run fails, no retry
                # (`fatalPodSubmissionErrors` in config/executor/config.yaml).
                self.finished(
                    launch.run_id, 0, f'namespaces "{launch.namespace}" not found', reason="PodCreationFailed"
                )
                continue
            try:
                resolved = resolve_pod_secrets(launch.pod, self._secrets, launch.namespace)
            except SecretUnavailable as exc:
                self._cannot_start(launch, str(exc))
                continue
            try:
                self.pod_runner.launch(dataclasses.replace(launch, secrets=resolved), self)
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
        state = self._state
        container = launch.container.name
        error = (
            f"Unable to start pod.\nContainer {container} is in state Waiting with reason {WAITING_REASON}: {reason}"
        )
        launch.log.note(error)
        with state.lock:
            run = state.index.runs.get(launch.run_id)
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
                classification = state.cluster.error_categories.classify((), "", error)
                run.error = error = classification.with_hint(error)
                status = event_pb2.ContainerStatus(
                    name=container, message=reason, reason=WAITING_REASON, cause=event_pb2.Error
                )
                state.events.append(
                    "failed",
                    job,
                    **pod_event_fields(run),
                    reason=error,
                    container_statuses=[status],
                    cause=event_pb2.Error,
                    **classification.event_fields(),
                )
        state.wake.set()

    # RunReporter: called by the executor

    def pending(self, run_id: str) -> bool:
        return self._advance(run_id, JobState.PENDING)

    def running(self, run_id: str) -> bool:
        return self._advance(run_id, JobState.RUNNING)

    def finished(
        self, run_id: str, exit_code: int, error: str, containers: tuple[ContainerEnd, ...] = (), reason: str = ""
    ) -> None:
        state = self._state
        with state.lock:
            run = state.index.runs.get(run_id)
            if run is None or run.lost:
                return
            run.exit_code = exit_code
            run.containers, run.pod_reason = containers, reason
            run.finished_at = run.finished_at or time.time()
            self._release(run)
            job = run.job
            state.store.job_changed(job)  # the run's end and its log, even when the job had ended already
            if not job.state.terminal and job.latest_run is run:
                if exit_code == 0 and not reason:
                    job.move_to(JobState.SUCCEEDED)
                    # Bare, as real Armada's: its scheduler's JobSucceeded carries no pod, node or cluster
                    # (internal/server/event/conversion/conversions.go); the running event named them.
                    state.events.append("succeeded", job)
                else:
                    job.move_to(JobState.FAILED)
                    fields = failure_event_fields(run, exit_code, error, state.cluster.error_categories)
                    run.error = fields["reason"]
                    state.events.append("failed", job, **fields)
        state.wake.set()

    def note(self, run_id: str, text: str) -> None:
        with self._state.lock:
            run = self._state.index.runs.get(run_id)
            if run is not None:
                run.note = f"{run.note}\n{text}" if run.note else text
                run.log.note(text)
                self._state.store.job_changed(run.job)

    def _advance(self, run_id: str, to: JobState) -> bool:
        state = self._state
        with state.lock:
            run = state.index.runs.get(run_id)
            if run is None or run.job.state.terminal or run.job.latest_run is not run:
                return False
            now = time.time()
            pool = state.cluster.pool
            if to == JobState.PENDING:
                run.pending_at = now
                state.events.append("pending", run.job, pool=pool, **pod_event_fields(run, with_node=False))
            else:
                run.started_at = now
                state.events.append("running", run.job, pool=pool, **pod_event_fields(run))
            run.job.move_to(to, now)
            if to == JobState.RUNNING:
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
        if self._ingress is not None:
            for port, host in run.ingress_hosts:
                self._ingress.add(host, port)
        self._state.events.append("ingress_info", run.job, **pod_event_fields(run), ingress_addresses=addresses)

    # Ending runs on request

    def cancel(self, job: Job, reason: str, requestor: str) -> list[Kill]:
        """Under the lock: the job cancelled by `requestor`; returns what must be killed."""
        job.cancel_reason, job.cancelled_at = reason or "cancelled by user", time.time()
        job.cancel_user = requestor
        self._state.backlogs[job.queue].discard(job)
        job.move_to(JobState.CANCELLED)
        return self._stop_run(job)

    def preempt(self, job: Job, reason: str, requestor: str) -> list[Kill]:
        """Under the lock: the job's run preempted (preempted then failed); returns what must be killed."""
        run = job.latest_run
        assert run is not None
        run.error = job.error = reason
        job.move_to(JobState.PREEMPTED)
        self._state.events.append_sequence(
            [
                ("preempted", job, {"run_id": run.id, "reason": reason, "requestor": requestor}),
                ("failed", job, {"reason": reason}),
            ]
        )
        return self._stop_run(job)

    def kill(self, kills: list[Kill]) -> None:
        for run_id, grace in kills:
            self.pod_runner.kill(run_id, grace)

    # Runs lost or given back

    def return_lease(self, run_id: str, message: str, run_attempted: bool) -> None:
        """A run given back for a system reason: requeue the job, or fail it once its attempts are spent.

        As Armada's scheduler does (scheduler/scheduler.go): only attempted runs count, and a job
        is retried while it has had fewer than MAX_ATTEMPTED_RUNS of them.
        """
        state = self._state
        kills = []
        with state.lock:
            run = state.index.runs.get(run_id)
            if run is None or run.job.state.terminal or run.job.latest_run is not run:
                return
            job = run.job
            run.attempted = run_attempted
            run.error = message
            kills += self._lose(run)
            state.events.append(
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
                state.backlog(job.queue).add(job)
            else:
                job.error = give_up_message(message)
                job.move_to(JobState.FAILED)
                state.events.append("failed", job, reason=job.error, **internal(SUBCATEGORY_MAX_RUNS_EXCEEDED))
            run.state = RunState.LEASE_RETURNED
        self.kill(kills)
        state.wake.set()

    def lose_pods(self) -> None:
        """What an executor restart does to the pods it had, as Armada's executor reports them
        (internal/executor/service/pod_issue_handler.go): a running pod that vanished fails the
        job; a pod still starting is a retryable issue, its lease returned."""
        with self._state.lock:
            jobs = self._state.index.jobs.values()
            runs = [job.latest_run for job in jobs if job.state in ACTIVE and job.latest_run]
        for run in runs:
            if run.job.state == JobState.RUNNING:
                self._pod_missing(run)
            else:
                self.return_lease(run.id, POD_MISSING, run_attempted=run.job.state == JobState.PENDING)

    def _pod_missing(self, run: Run) -> None:
        state = self._state
        with state.lock:
            job = run.job
            if job.state.terminal or job.latest_run is not run:
                return
            kills = self._lose(run)
            run.error = job.error = POD_MISSING
            job.move_to(JobState.FAILED)
            state.events.append("failed", job, reason=POD_MISSING, **internal(SUBCATEGORY_POD_MISSING))
        self.kill(kills)
        state.wake.set()

    def _lose(self, run: Run) -> list[Kill]:
        """Stop the run's pod without waiting for its report (which no longer counts) and free its node."""
        kills = self._stop_run(run.job)
        run.lost = True
        run.finished_at = run.finished_at or time.time()
        self._release(run)
        return kills

    def _stop_run(self, job: Job) -> list[Kill]:
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

    def _release(self, run: Run) -> None:
        if self._ingress is not None:
            for _, host in run.ingress_hosts:
                self._ingress.remove(host)
        if run.holds_capacity:
            run.holds_capacity = False
            self._state.scheduler.release(run.job, run.node.index)
