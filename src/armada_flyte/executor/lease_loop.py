"""The executor's conversation with real Armada's scheduler: lease, launch, report, again.

Each cycle sends one `LeaseRequest` on a fresh `LeaseJobRuns` stream (the cluster's nodes and
the runs held on them) and reads the answer up to its end marker: runs to cancel, runs to
preempt, new leases (internal/scheduler/api.go answers once per stream, as Armada's executor
uses it in internal/executor/service/lease_requester.go). Events go out through `ReportEvents`
as soon as they are queued. When the scheduler can't be reached, pods keep running and events
wait; the loop retries with a bounded, jittered backoff, and the first cycle that gets through
delivers them and reports every run still held.
"""

from __future__ import annotations

import logging
import pathlib
import random
import threading
import time
from dataclasses import dataclass
from typing import Any, Optional

import grpc

from armada_flyte.cluster.cluster_file import Cluster
from armada_flyte.cluster.secrets import SecretStore
from armada_flyte.executor.cluster_nodes import DEFAULT_MAX_JOBS_TO_LEASE, lease_request
from armada_flyte.executor.held_runs import HeldRuns
from armada_flyte.executor.leases import LeasedRun, LeaseRefused, pod_launch
from armada_flyte.executor.scheduler_connection import SchedulerConnection
from armada_flyte.executor.stubs import executorapi_pb2, executorapi_pb2_grpc
from armada_flyte.pod_runner import PodEnd, PodLog, PodRunner, grace_seconds

log = logging.getLogger(__name__)

STOPPED_MESSAGE = "the armada-flyte executor stopped while the pod ran"


@dataclass(frozen=True)
class LoopSettings:
    """How often and how patiently the executor talks to the scheduler."""

    lease_interval: float = 1.0
    """Seconds between lease requests (each is also the executor's heartbeat)."""
    lease_timeout: float = 30.0
    """Armada's executor's `jobLeaseRequestTimeout`."""
    report_timeout: float = 10.0
    min_backoff: float = 0.25
    max_backoff: float = 5.0
    """Retries of an unreachable scheduler wait at most this long, so a restarted one is found quickly."""
    max_jobs_to_lease: int = DEFAULT_MAX_JOBS_TO_LEASE
    events_per_report: int = 500
    ended_run_retention: float = 600.0
    """Seconds an ended run is still reported while the scheduler has not shown it recorded the end
    (Armada's executor keeps a failed pod about as long: `failedPodExpiry` 10 min)."""


class Backoff:
    """Doubling, jittered waits between `low` and `high` seconds; `reset` after a success."""

    def __init__(self, low: float, high: float):
        self.low, self.high = low, high
        self._next = low

    def reset(self) -> None:
        self._next = self.low

    def next(self) -> float:
        delay = self._next
        self._next = min(self.high, self._next * 2)
        return delay * random.uniform(0.8, 1.0)


class ArmadaExecutor:
    """Leases runs from the scheduler `connection` names and runs their pods with `runner` until `stop()`.

    `pod_log_dir`, when set, receives each pod's log as `<namespace>/<pod name>.log` once it ends.
    `secrets` are the cluster's Secrets that pods' `secretKeyRef`, `envFrom` and secret volumes read.
    """

    def __init__(
        self,
        connection: SchedulerConnection,
        cluster: Cluster,
        runner: PodRunner,
        settings: LoopSettings = LoopSettings(),
        pod_log_dir: Optional[pathlib.Path] = None,
        secrets: Optional[SecretStore] = None,
    ):
        self.connection = connection
        self.target = connection.target
        self._metadata = connection.metadata()
        self.cluster = cluster
        self.runner = runner
        self.settings = settings
        self.pod_log_dir = pod_log_dir
        self.secrets = secrets or SecretStore()
        self._news = threading.Event()
        self._stopping = threading.Event()
        self.runs = HeldRuns(cluster.error_categories, on_news=self._news.set, on_pod_end=self._keep_log)
        self.connected = threading.Event()
        """Set while the last call to the scheduler went through."""

    def stop(self) -> None:
        self._stopping.set()
        self._news.set()

    def run(self) -> None:
        """Lease and report until `stop()`; then give the runs still running back to Armada and kill their pods."""
        channel = _open_channel(self.connection, self._channel_options())
        stub = executorapi_pb2_grpc.ExecutorApiStub(channel)
        try:
            self._loop(stub)
        finally:
            self._shut_down(stub)
            channel.close()

    def _channel_options(self) -> list[tuple[str, Any]]:
        """gRPC's own reconnect backoff grows to 2 minutes; keep it within ours."""
        return [
            ("grpc.initial_reconnect_backoff_ms", int(self.settings.min_backoff * 1000)),
            ("grpc.min_reconnect_backoff_ms", int(self.settings.min_backoff * 1000)),
            ("grpc.max_reconnect_backoff_ms", int(self.settings.max_backoff * 1000)),
        ]

    def _loop(self, stub: Any) -> None:
        backoff = Backoff(self.settings.min_backoff, self.settings.max_backoff)
        next_lease = 0.0
        while not self._stopping.is_set():
            self._news.clear()  # before reporting: news queued meanwhile ends the wait below at once
            try:
                self._report(stub)
                if time.monotonic() >= next_lease:
                    self._lease(stub)
                    next_lease = time.monotonic() + self.settings.lease_interval
            except grpc.RpcError as exc:
                delay = backoff.next()
                if self.connected.is_set() or delay >= self.settings.max_backoff * 0.8:
                    log.warning("scheduler at %s: %s; retrying in %.1fs", self.target, _describe(exc), delay)
                self.connected.clear()
                self._stopping.wait(delay)
                continue
            if not self.connected.is_set():
                running = len(self.runs.live_run_ids())
                log.info("connected to the scheduler at %s; %d pods running", self.target, running)
            self.connected.set()
            backoff.reset()
            self._news.wait(timeout=max(0.0, next_lease - time.monotonic()))

    def _lease(self, stub: Any) -> None:
        self.runs.forget_ended(time.monotonic() - self.settings.ended_run_retention)
        request = lease_request(
            self.cluster,
            self.runs.runs_by_node(),
            tuple(self.runs.ended_run_ids()),
            max_jobs_to_lease=self.settings.max_jobs_to_lease,
        )
        leases, cancels, preempts = [], [], []
        for message in stub.LeaseJobRuns(iter([request]), timeout=self.settings.lease_timeout, metadata=self._metadata):
            kind = message.WhichOneof("event")
            if kind == "lease":
                leases.append(message.lease)
            elif kind == "cancel_runs":
                cancels += message.cancel_runs.job_run_ids_to_cancel
            elif kind == "preempt_runs":
                preempts += message.preempt_runs.job_run_ids_to_preempt
        for run_id in cancels:
            grace = self.runs.cancel(run_id)
            if grace is not None:
                log.info("run %s cancelled by the scheduler: stopping its pod", run_id)
                self.runner.kill(run_id, grace)
        for run_id in preempts:
            grace = self.runs.preempt(run_id)
            if grace is not None:
                log.info("run %s preempted by the scheduler: stopping its pod", run_id)
                self.runner.kill(run_id, grace)
        for lease in leases:
            self._start(lease)

    def _start(self, lease: executorapi_pb2.JobRunLease) -> None:
        if lease.job_run_id in self.runs:
            return  # leased again after a lost answer: it runs already
        try:
            run, launch = pod_launch(lease, self.cluster, self.secrets)
        except LeaseRefused as refused:
            log.warning(
                "run %s of job %s refused (%s): %s",
                refused.run.run_id,
                refused.run.job_id,
                refused.refusal.value,
                refused.message,
            )
            self.runs.refuse(refused)
            return
        log.info("run %s of job %s: pod %s on node %s", run.run_id, run.job_id, run.pod_name, run.node)
        self.runs.hold(run, launch.log, grace_seconds(launch.pod))
        try:
            self.runner.launch(launch, self.runs)
        except Exception as exc:
            log.exception("the pod runner could not launch pod %s", run.pod_name)
            self.runs.launch_failed(run.run_id, f"the pod runner could not launch the pod: {exc}")

    def _report(self, stub: Any) -> None:
        while batch := self.runs.take_outbox(self.settings.events_per_report):
            events = executorapi_pb2.EventList(events=[outgoing.sequence for outgoing in batch])
            try:
                stub.ReportEvents(events, timeout=self.settings.report_timeout, metadata=self._metadata)
            except grpc.RpcError:
                self.runs.undelivered(batch)
                raise
            self.runs.delivered(batch)

    def _shut_down(self, stub: Any) -> None:
        """Runs still running go back to Armada (it leases them again, to a later executor) and their pods
        are killed; the events are sent once, as far as the scheduler takes them."""
        returned = self.runs.give_back_all(STOPPED_MESSAGE)
        if returned:
            log.info("giving %d running runs back to Armada and stopping their pods", len(returned))
        self.runner.shutdown()
        try:
            self._report(stub)
        except grpc.RpcError as exc:
            log.warning("%d events not delivered at shutdown: %s", self.runs.pending_events(), _describe(exc))

    def _keep_log(self, run: LeasedRun, pod_log: PodLog, end: PodEnd) -> None:
        if self.pod_log_dir is None:
            return
        path = self.pod_log_dir / run.namespace / f"{run.pod_name}.log"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(f"{line}\n" for line in pod_log.texts()))
        except OSError as exc:
            log.warning("could not write the log of pod %s to %s: %s", run.pod_name, path, exc)


def _open_channel(connection: SchedulerConnection, options: list[tuple[str, Any]]) -> grpc.Channel:
    if not connection.tls:
        return grpc.insecure_channel(connection.target, options=options)
    roots = connection.ca_cert.read_bytes() if connection.ca_cert else None
    return grpc.secure_channel(connection.target, grpc.ssl_channel_credentials(roots), options=options)


_AUTH_HINTS = {
    grpc.StatusCode.UNAUTHENTICATED: " (the scheduler refused the executor's credentials: check --auth-username with "
    "--auth-password-file, or --auth-token-file)",
    grpc.StatusCode.PERMISSION_DENIED: " (the executor's user lacks Armada's execute_jobs permission in the "
    "scheduler's auth.permissionGroupMapping)",
}


def _describe(exc: grpc.RpcError) -> str:
    code = exc.code() if isinstance(exc, grpc.Call) else None
    details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
    return f"{code.name if code else 'error'}: {details}{_AUTH_HINTS.get(code, '')}"
