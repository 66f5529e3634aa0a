"""Every gRPC call to Armada, in one place: channels, auth, TLS, bounded retries, batching.

Async throughout (grpc.aio), so a poll never blocks the event loop. An aio channel belongs to
the event loop that made it, so one channel is kept per loop. Keeping every Armada call, its retry
and its error translation here is what lets the rest of the connector stay free of gRPC (the
request items a job becomes are built in `submit_items`).
"""

from __future__ import annotations

import asyncio
import logging
import random
import weakref
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Awaitable, Callable, Iterable, Optional, TypeVar

import grpc
from armada_client.armada import (
    binoculars_pb2,
    binoculars_pb2_grpc,
    event_pb2,
    event_pb2_grpc,
    job_pb2,
    job_pb2_grpc,
    submit_pb2,
    submit_pb2_grpc,
)
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1

from armada_flyte.armada_names import GANG_CARDINALITY, MAX_IDS_PER_CALL, JobState
from armada_flyte.connector.armada.auth import credentials_for
from armada_flyte.connector.armada.call_batch import CallBatcher
from armada_flyte.connector.armada.channels import authorization_metadata, id_chunks, open_channel
from armada_flyte.connector.armada.submit_items import submit_item
from armada_flyte.connector.config.settings import ConnectorConfig
from armada_flyte.connector.model.job_request import JobRequest
from armada_flyte.connector.model.run_details import RunDetails
from armada_flyte.errors import (
    ArmadaAuthError,
    ArmadaFlyteError,
    ArmadaUnavailable,
    SubmissionRefused,
)
from armada_flyte.protos import scheduler_reporting_pb2 as reporting_pb2
from armada_flyte.protos import scheduler_reporting_pb2_grpc as reporting_pb2_grpc

log = logging.getLogger(__name__)


_TRANSIENT = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED}
T = TypeVar("T")
ALL_JOB_SETS = ("", "")
"""The one batch key of lookups by id: GetJobDetails and GetJobErrors take ids of any job sets."""


@dataclass
class _LoopBatchers:
    """One event loop's batchers (a future belongs to its loop): creates, cancels (per reason), lookups."""

    submits: CallBatcher[submit_pb2.JobSubmitRequestItem, str]
    details: CallBatcher[str, Optional[RunDetails]]
    errors: CallBatcher[str, str]
    cancels: dict[str, CallBatcher[str, None]] = field(default_factory=dict)


class ArmadaApi:
    """A thin async facade over Armada's Submit, Jobs and Binoculars services."""

    def __init__(self, settings: ConnectorConfig):
        self._connection = settings.connection
        self._limits = settings.limits
        self._credentials = credentials_for(settings.connection)
        self._channels: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, grpc.aio.Channel]] = (
            weakref.WeakKeyDictionary()
        )
        self._batchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopBatchers] = (
            weakref.WeakKeyDictionary()
        )

    # ---- channel, metadata, retries ----
    def _channel(self, target: Optional[str] = None) -> grpc.aio.Channel:
        """This loop's channel to `target` (default: the Armada API)."""
        target = target or self._connection.armada_url
        channels = self._channels.setdefault(asyncio.get_running_loop(), {})
        if target not in channels:
            channels[target] = open_channel(self._connection, target, aio=True)
        return channels[target]

    def auth_metadata(self) -> list[tuple[str, str]]:
        """The `authorization` header for the configured credentials (empty: none); may block to fetch a token."""
        return authorization_metadata(self._credentials.header())

    async def _kw(self) -> dict[str, Any]:
        header = self._credentials.cached()
        if header is None:
            header = await asyncio.to_thread(self._credentials.header)
        return {"metadata": authorization_metadata(header), "timeout": self._connection.grpc_timeout_seconds}

    async def _call(self, what: str, make_call: Callable[[dict[str, Any]], Awaitable[T]]) -> T:
        """Run one RPC, retrying transient failures with jittered backoff, a bounded number of times.

        A refused token is fetched again once (it may have been revoked or expired early)."""
        attempts = self._connection.grpc_retries + 1
        refreshed = False
        attempt = 0
        while True:
            try:
                return await make_call(await self._kw())
            except grpc.aio.AioRpcError as exc:
                code = exc.code()
                if code == grpc.StatusCode.UNAUTHENTICATED and not refreshed and self._credentials.invalidate():
                    refreshed = True
                    log.info("Armada %s: UNAUTHENTICATED; fetching a new token and retrying once", what)
                    continue
                attempt += 1
                if code in _TRANSIENT and attempt < attempts:
                    delay = min(2.0, 0.1 * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)
                    log.warning("Armada %s: %s (%s); retrying in %.2fs", what, code.name, exc.details(), delay)
                    await asyncio.sleep(delay)
                    continue
                raise _translate(what, exc, self._connection.armada_url) from None

    # ---- Submit ----
    async def submit(self, queue: str, job_set_id: str, jobs: Iterable[JobRequest]) -> list[str]:
        """Submit jobs; returns their ids in order. Refusals raise `SubmissionRefused` with Armada's reason."""
        return await self._submit_items(queue, job_set_id, [submit_item(job) for job in jobs])

    async def _submit_items(self, queue: str, job_set_id: str, items: list[Any]) -> list[str]:
        """Send request items (`submit_item`) as one SubmitJobs call."""
        request = submit_pb2.JobSubmitRequest(queue=queue, job_set_id=job_set_id, job_request_items=items)
        stub = submit_pb2_grpc.SubmitStub(self._channel())
        response = await self._call("SubmitJobs", lambda kw: stub.SubmitJobs(request, **kw))
        ids = []
        for item in response.job_response_items:
            if item.error:  # real Armada never sets it, but other servers might
                raise SubmissionRefused(f"Armada refused job in queue {queue!r}: {item.error}")
            ids.append(item.job_id)
        return ids

    async def submit_one(self, queue: str, job_set_id: str, job: JobRequest) -> str:
        """Submit one job; concurrent calls for the same queue and job set share one SubmitJobs call.

        The job becomes its request item here, in its own create: a pod spec Kubernetes can't take
        fails this create alone, never the others of its batch."""
        item = submit_item(job)
        return await self._loop_batchers().submits.submit(queue, job_set_id, item)

    async def submit_item_bytes(self, queue: str, job_set_id: str, item: bytes, gang_cardinality: int = 0) -> str:
        """Submit one request item serialised at create (an architecture preference's later step). A gang's
        later step is submitted with `gang_cardinality` (when not 0) in place of create's: the members that
        succeeded on the step it moved from are not in it, and create could not know them."""
        parsed = submit_pb2.JobSubmitRequestItem.FromString(item)
        if gang_cardinality:
            parsed.annotations[GANG_CARDINALITY] = str(gang_cardinality)
        return await self._loop_batchers().submits.submit(queue, job_set_id, parsed)

    def _loop_batchers(self) -> _LoopBatchers:
        loop = asyncio.get_running_loop()
        batchers = self._batchers.get(loop)
        if batchers is None:
            limits, lookup_window = self._limits, self._limits.status_batch_window_seconds
            batchers = self._batchers[loop] = _LoopBatchers(
                submits=CallBatcher(
                    self._submit_items,
                    limits.submit_batch_window_seconds,
                    limits.submit_batch_max_items,
                    refused=lambda exc: isinstance(exc, SubmissionRefused),
                    max_wait=limits.submit_batch_max_wait_seconds,
                    by_turns=True,
                    max_in_flight=limits.submit_batch_max_in_flight,
                ),
                details=CallBatcher(self._details_in_order, lookup_window, MAX_IDS_PER_CALL),
                errors=CallBatcher(self._errors_in_order, lookup_window, MAX_IDS_PER_CALL),
            )
        return batchers

    async def cancel(self, queue: str, job_set_id: str, job_ids: list[str], reason: str = "cancelled by Flyte") -> None:
        """Cancel jobs of one job set in one CancelJobs call (Armada cancels ended jobs as a no-op)."""
        stub = submit_pb2_grpc.SubmitStub(self._channel())
        request = submit_pb2.JobCancelRequest(queue=queue, job_set_id=job_set_id, job_ids=job_ids, reason=reason)
        await self._call("CancelJobs", lambda kw: stub.CancelJobs(request, **kw))

    async def cancel_job_set(self, queue: str, job_set_id: str, reason: str, *, queued_only: bool) -> None:
        """CancelJobSet: with `queued_only`, Armada cancels only the set's jobs still queued when it applies the
        request (a job leased a moment before is kept), else every job of the set that has not ended."""
        stub = submit_pb2_grpc.SubmitStub(self._channel())
        states = [int(JobState.QUEUED)] if queued_only else []
        request = submit_pb2.JobSetCancelRequest(
            queue=queue, job_set_id=job_set_id, reason=reason, filter=submit_pb2.JobSetFilter(states=states)
        )
        await self._call("CancelJobSet", lambda kw: stub.CancelJobSet(request, **kw))

    async def cancel_one(self, queue: str, job_set_id: str, job_id: str, reason: str = "cancelled by Flyte") -> None:
        """Cancel one job; concurrent cancels for the same job set (and reason) share one CancelJobs call.

        A refused call is sent again one id per call, so a refusal fails only its own cancel."""
        batchers = self._loop_batchers().cancels
        batcher = batchers.get(reason)
        if batcher is None:

            async def send(queue: str, job_set_id: str, ids: list[str]) -> list[None]:
                await self.cancel(queue, job_set_id, ids, reason)
                return [None] * len(ids)

            limits = self._limits
            batcher = batchers[reason] = CallBatcher(
                send,
                limits.cancel_batch_window_seconds,
                MAX_IDS_PER_CALL,
                refused=_refused_cancel,
                max_wait=limits.cancel_batch_max_wait_seconds,
            )
        await batcher.submit(queue, job_set_id, job_id)

    async def run_details_of(self, job_id: str) -> Optional[RunDetails]:
        """The job's latest run (None: it never ran); concurrent asks share GetJobDetails calls of 500 ids."""
        return await self._loop_batchers().details.submit(*ALL_JOB_SETS, job_id)

    async def error_of(self, job_id: str) -> str:
        """Armada's error for the job ("" if none); concurrent asks share GetJobErrors calls of 500 ids."""
        return await self._loop_batchers().errors.submit(*ALL_JOB_SETS, job_id)

    async def _details_in_order(self, _queue: str, _job_set: str, job_ids: list[str]) -> list[Optional[RunDetails]]:
        found = await self.run_details(job_ids)
        return [found.get(job_id) for job_id in job_ids]

    async def _errors_in_order(self, _queue: str, _job_set: str, job_ids: list[str]) -> list[str]:
        found = await self.errors(job_ids)
        return [found.get(job_id, "") for job_id in job_ids]

    # ---- Jobs ----
    async def _per_chunk(
        self, what: str, job_ids: list[str], call: Callable[[list[str], dict[str, Any]], Awaitable[T]]
    ) -> list[T]:
        """`call` once per chunk of at most 500 ids (Armada's limit), chunks sent concurrently, each with the
        bounded retry."""
        chunks = id_chunks(job_ids)
        if len(chunks) == 1:
            return [await self._call(what, lambda kw: call(chunks[0], kw))]
        calls = (self._call(what, lambda kw, chunk=chunk: call(chunk, kw)) for chunk in chunks)
        return list(await asyncio.gather(*calls))

    async def status(self, job_ids: list[str]) -> dict[str, int]:
        """JobState of each id (UNKNOWN for ids Armada doesn't know), in calls of at most 500 ids."""
        stub = job_pb2_grpc.JobsStub(self._channel())
        states: dict[str, int] = {}
        for response in await self._per_chunk(
            "GetJobStatus",
            job_ids,
            lambda chunk, kw: stub.GetJobStatus(job_pb2.JobStatusRequest(job_ids=chunk), **kw),
        ):
            states.update(response.job_states)
        return {job_id: states.get(job_id, JobState.UNKNOWN) for job_id in job_ids}

    async def errors(self, job_ids: list[str]) -> dict[str, str]:
        stub = job_pb2_grpc.JobsStub(self._channel())
        found: dict[str, str] = {}
        for response in await self._per_chunk(
            "GetJobErrors",
            job_ids,
            lambda chunk, kw: stub.GetJobErrors(job_pb2.JobErrorsRequest(job_ids=chunk), **kw),
        ):
            found.update(response.job_errors)
        return found

    async def run_details(self, job_ids: list[str]) -> dict[str, RunDetails]:
        """Node and cluster of each job's latest run (jobs that never ran are left out)."""
        stub = job_pb2_grpc.JobsStub(self._channel())
        found: dict[str, RunDetails] = {}
        for response in await self._per_chunk(
            "GetJobDetails",
            job_ids,
            lambda chunk, kw: stub.GetJobDetails(job_pb2.JobDetailsRequest(job_ids=chunk, expand_job_run=True), **kw),
        ):
            for job_id, details in response.job_details.items():
                runs = [r for r in details.job_runs if r.run_id == details.latest_run_id] or list(details.job_runs)
                if runs:
                    run = runs[0]  # Armada lists a job's runs newest first
                    finished = _seconds(run, "finished_ts")
                    started = _seconds(run, "started_ts") or _seconds(run, "pending_ts") or _seconds(run, "leased_ts")
                    found[job_id] = RunDetails(
                        run.node, run.cluster, JobState.name_of(details.state), finished, started
                    )
        return found

    # ---- Event ----
    async def job_set_events(
        self, queue: str, job_set_id: str, from_message_id: str, *, watch: bool
    ) -> AsyncIterator[event_pb2.EventStreamMessage]:
        """The job set's events after `from_message_id` ("" = from the start); with `watch`, the stream
        stays open for new ones. Errors come out translated, unretried: the caller resumes from the last id."""
        try:
            async for message in self._job_set_stream(queue, job_set_id, from_message_id, watch):
                yield message
        except grpc.aio.AioRpcError as exc:
            raise _translate("GetJobSetEvents", exc, self._connection.armada_url) from None

    async def job_set_history(self, queue: str, job_set_id: str) -> list[event_pb2.EventStreamMessage]:
        """Every event of the job set so far, in order; none for a job set Armada holds no events of (real
        Armada answers NOT_FOUND for it, the embedded server an empty stream). Other errors come out translated."""
        try:
            return [message async for message in self._job_set_stream(queue, job_set_id, "", False)]
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND:
                return []
            raise _translate("GetJobSetEvents", exc, self._connection.armada_url) from None

    async def _job_set_stream(
        self, queue: str, job_set_id: str, from_message_id: str, watch: bool
    ) -> AsyncIterator[event_pb2.EventStreamMessage]:
        stub = event_pb2_grpc.EventStub(self._channel())
        request = event_pb2.JobSetRequest(id=job_set_id, queue=queue, from_message_id=from_message_id, watch=watch)
        timeout = None if watch else self._connection.grpc_timeout_seconds
        call = stub.GetJobSetEvents(request, metadata=self.auth_metadata(), timeout=timeout)
        try:
            async for message in call:
                yield message
        finally:
            call.cancel()

    # ---- SchedulerReporting (served by Armada's API server: internal/server/server.go) ----
    async def job_report(self, job_id: str) -> str:
        """The scheduler's text report of its latest round for the job, per pool."""
        stub = reporting_pb2_grpc.SchedulerReportingStub(self._channel())
        request = reporting_pb2.JobReportRequest(job_id=job_id)
        return (await self._call("GetJobReport", lambda kw: stub.GetJobReport(request, **kw))).report

    async def queue_report(self, queue: str) -> str:
        """The scheduler's text report of its latest round for the queue, per pool."""
        stub = reporting_pb2_grpc.SchedulerReportingStub(self._channel())
        request = reporting_pb2.QueueReportRequest(queue_name=queue)
        return (await self._call("GetQueueReport", lambda kw: stub.GetQueueReport(request, **kw))).report

    # ---- Binoculars ----
    async def logs(self, job_id: str, namespace: str) -> list[str]:
        """The job's container log lines, from Armada's Binoculars log API."""
        stub = binoculars_pb2_grpc.BinocularsStub(self._channel(self._connection.binoculars_url))
        # log_options always set: Armada's Binoculars reads its fields without checking for none (a nil pointer,
        # INTERNAL, without it: internal/binoculars/service/logs.go).
        request = binoculars_pb2.LogRequest(
            job_id=job_id, pod_number=0, pod_namespace=namespace, log_options=core_v1.PodLogOptions()
        )
        response = await self._call("Logs", lambda kw: stub.Logs(request, **kw))
        return [line.line for line in response.log]

    async def close(self) -> None:
        """Close the running loop's channels (others close with their loops)."""
        for channel in self._channels.pop(asyncio.get_running_loop(), {}).values():
            await channel.close()


def _seconds(run: Any, name: str) -> float:
    """A run's timestamp field as seconds since the epoch (0.0 when unset)."""
    if not run.HasField(name):
        return 0.0
    stamp = getattr(run, name)
    return stamp.seconds + stamp.nanos / 1e9


def _refused_cancel(exc: BaseException) -> bool:
    """A cancel Armada answered with an error of its own (not unreachable): try each id alone."""
    return isinstance(exc, ArmadaFlyteError) and not isinstance(exc, ArmadaUnavailable)


def _translate(what: str, exc: grpc.aio.AioRpcError, url: str) -> ArmadaFlyteError:
    code, details = exc.code(), exc.details() or ""
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return ArmadaAuthError(
            f"Armada at {url} refused our credentials ({what}): {details}. Check ARMADA_FLYTE_AUTH_TOKEN, "
            "ARMADA_FLYTE_AUTH_USERNAME/ARMADA_FLYTE_AUTH_PASSWORD, the ARMADA_FLYTE_OIDC_* settings or "
            "ARMADA_FLYTE_AUTH_EXEC_CMD in the connector's settings."
        )
    if code == grpc.StatusCode.PERMISSION_DENIED:
        if "could not find queue" in details:
            return SubmissionRefused(
                f"Armada refused the submission: {details}. Create the queue (`armadactl create queue NAME`) "
                "or set ArmadaConfig(queue=...) to an existing one."
            )
        return ArmadaAuthError(
            f"Armada at {url} denied {what}: {details}. Ask your Armada admin for permission on the queue."
        )
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return SubmissionRefused(f"Armada refused the job as invalid ({what}): {details}")
    if code in _TRANSIENT:
        return ArmadaUnavailable(f"Armada at {url} is unavailable ({what}): {code.name}: {details}. Check ARMADA_URL.")
    return ArmadaFlyteError(f"Armada {what} failed: {code.name}: {details}")
