"""The view's gRPC reads of an Armada: only services Armada users have, so a real Armada answers them too.

Submit.Health for whether it serves (and why not, if it says); Submit.GetQueues (else
Jobs.GetActiveQueues) for the queues; Event.GetJobSetEvents for the jobs of
a job set (followed from the last message id, so each refresh reads only new events); Jobs'
GetJobDetails and GetJobErrors; Binoculars' Logs; SchedulerReporting's job and queue reports.
The channel and credentials are the connector's (TLS, CA bundle, token or basic auth), so
`armada-flyte view` reaches any Armada the connector can. Sync gRPC: the page server is threaded.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterable, Optional, TypeVar

import grpc
from armada_client.armada import (
    binoculars_pb2,
    binoculars_pb2_grpc,
    event_pb2,
    event_pb2_grpc,
    health_pb2,
    job_pb2,
    job_pb2_grpc,
    submit_pb2,
    submit_pb2_grpc,
)
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1
from google.protobuf import empty_pb2

from armada_flyte.connector.armada.auth import credentials_for
from armada_flyte.connector.armada.channels import authorization_metadata, id_chunks, open_channel
from armada_flyte.connector.config.settings import ConnectorConfig
from armada_flyte.errors import ArmadaFlyteError
from armada_flyte.health_reasons import reason_in
from armada_flyte.job_set_listing import PATH, ListedJobSet, Listing, decode_response, encode_request
from armada_flyte.protos import scheduler_reporting_pb2 as reporting_pb2
from armada_flyte.protos import scheduler_reporting_pb2_grpc as reporting_pb2_grpc

T = TypeVar("T")


class ArmadaReadError(ArmadaFlyteError):
    """A read the page needed failed; the page shows this text where the data would be."""

    def __init__(self, message: str, code: str = ""):
        super().__init__(message)
        self.code = code
        """gRPC's status code name (`NOT_FOUND`, `UNIMPLEMENTED`, ...)."""


class ArmadaReader:
    """Reads one Armada (and its Binoculars). Owns its channels: `close()` closes them."""

    def __init__(self, settings: ConnectorConfig):
        self._settings = settings
        self._credentials = credentials_for(settings)
        self._channels: dict[str, grpc.Channel] = {}
        self._lock = threading.Lock()
        self._followed: dict[tuple[str, str], tuple[str, list[str]]] = {}
        """(queue, job set) -> (last message id read, job ids in order of first appearance)."""

    @property
    def url(self) -> str:
        return self._settings.armada_url

    def _channel(self, target: str = "") -> grpc.Channel:
        target = target or self._settings.armada_url
        with self._lock:
            if target not in self._channels:
                self._channels[target] = open_channel(self._settings, target, aio=False)
            return self._channels[target]

    def _kw(self) -> dict[str, Any]:
        metadata = authorization_metadata(self._credentials.header())
        return {"metadata": metadata, "timeout": self._settings.grpc_timeout_seconds}

    def _call(self, what: str, call: Callable[[dict[str, Any]], T], where: str = "") -> T:
        try:
            return call(self._kw())
        except grpc.RpcError as exc:
            code, at = exc.code().name, where or self.url
            raise ArmadaReadError(f"Armada {what} at {at} failed: {code}: {exc.details()}", code) from None

    def not_serving(self) -> str:
        """Why Armada says it is not serving (Submit.Health, with the reason the embedded server gives), or ""
        while it serves or can't be asked (the reads then say what is wrong)."""
        submit = submit_pb2_grpc.SubmitStub(self._channel())
        try:
            response, call = submit.Health.with_call(empty_pb2.Empty(), **self._kw())
        except grpc.RpcError:
            return ""
        if response.status == health_pb2.HealthCheckResponse.SERVING:
            return ""
        said = f"Armada at {self.url} reports {health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)}"
        reason = reason_in(call.trailing_metadata())
        return f"{said}: {reason[0]}; {reason[1]}" if reason else said

    def queues(self) -> list[str]:
        """Every queue (Submit.GetQueues); a server without it: the queues with active jobs (GetActiveQueues)."""
        submit = submit_pb2_grpc.SubmitStub(self._channel())
        try:
            request = submit_pb2.StreamingQueueGetRequest()
            messages = self._call("GetQueues", lambda kw: list(submit.GetQueues(request, **kw)))
            return sorted(m.queue.name for m in messages if m.HasField("queue"))
        except ArmadaReadError:
            jobs = job_pb2_grpc.JobsStub(self._channel())
            active_request = job_pb2.GetActiveQueuesRequest()
            active = self._call("GetActiveQueues", lambda kw: jobs.GetActiveQueues(active_request, **kw))
            return sorted({q for by_pool in active.active_queues_by_pool.values() for q in by_pool.queues})

    def job_ids(self, queue: str, job_set: str) -> list[str]:
        """The job set's job ids in order of submission, from its event stream (read on from the last time)."""
        key = (queue, job_set)
        with self._lock:
            after, ids = self._followed.get(key, ("", []))
        stub = event_pb2_grpc.EventStub(self._channel())
        request = event_pb2.JobSetRequest(id=job_set, queue=queue, from_message_id=after, watch=False)
        seen, found = set(ids), list(ids)

        def read(kw: dict[str, Any]) -> str:
            last = after
            for message in stub.GetJobSetEvents(request, **kw):
                last = message.id
                event = getattr(message.message, message.message.WhichOneof("events") or "", None)
                job_id = getattr(event, "job_id", "")
                if job_id and job_id not in seen:
                    seen.add(job_id)
                    found.append(job_id)
            return last

        last = self._call("GetJobSetEvents", read)
        with self._lock:
            self._followed[key] = (last, found)
        return list(found)

    def listing(self) -> Optional[Listing]:
        """The job sets the Armada holds, newest first, and the view beside it, when it can say (the embedded
        server); None for an Armada whose API lists no job sets (a real one answers UNIMPLEMENTED)."""
        call = self._channel().unary_unary(
            PATH, request_serializer=lambda _: encode_request(), response_deserializer=decode_response
        )
        try:
            return self._call("ListJobSets", lambda kw: call(None, **kw))
        except ArmadaReadError as exc:
            if exc.code == "UNIMPLEMENTED":
                return None
            raise

    def listed_job_sets(self) -> Optional[list[ListedJobSet]]:
        """`listing()`'s job sets (None where the Armada can't list them)."""
        listing = self.listing()
        return listing.job_sets if listing is not None else None

    def details(self, job_ids: Iterable[str]) -> dict[str, job_pb2.JobDetails]:
        """GetJobDetails with the job spec and runs, at most 500 ids a call."""
        stub = job_pb2_grpc.JobsStub(self._channel())
        found: dict[str, job_pb2.JobDetails] = {}
        for chunk in id_chunks(list(job_ids)):
            request = job_pb2.JobDetailsRequest(job_ids=chunk, expand_job_spec=True, expand_job_run=True)
            found.update(self._call("GetJobDetails", lambda kw, r=request: stub.GetJobDetails(r, **kw)).job_details)
        return found

    def errors(self, job_ids: Iterable[str]) -> dict[str, str]:
        """GetJobErrors' text per job (jobs without an error are left out)."""
        stub = job_pb2_grpc.JobsStub(self._channel())
        found: dict[str, str] = {}
        for chunk in id_chunks(list(job_ids)):
            request = job_pb2.JobErrorsRequest(job_ids=chunk)
            found.update(self._call("GetJobErrors", lambda kw, r=request: stub.GetJobErrors(r, **kw)).job_errors)
        return {job_id: text for job_id, text in found.items() if text}

    @property
    def binoculars_url(self) -> str:
        """Where the logs are asked for: `binoculars_url`, else the Armada address (the embedded server serves both)."""
        return self._settings.binoculars_url or self._settings.armada_url

    def log(self, job_id: str, namespace: str) -> list[str]:
        """The job's pod log lines, from Binoculars."""
        stub = binoculars_pb2_grpc.BinocularsStub(self._channel(self.binoculars_url))
        # log_options always set: Armada's Binoculars reads its fields without checking for none (a nil pointer,
        # INTERNAL, without it: internal/binoculars/service/logs.go).
        request = binoculars_pb2.LogRequest(
            job_id=job_id, pod_number=0, pod_namespace=namespace, log_options=core_v1.PodLogOptions()
        )
        response = self._call("Logs", lambda kw: stub.Logs(request, **kw), self.binoculars_url)
        return [line.line for line in response.log]

    def job_report(self, job_id: str) -> str:
        stub = reporting_pb2_grpc.SchedulerReportingStub(self._channel())
        request = reporting_pb2.JobReportRequest(job_id=job_id)
        return self._call("GetJobReport", lambda kw: stub.GetJobReport(request, **kw)).report

    def queue_report(self, queue: str) -> str:
        stub = reporting_pb2_grpc.SchedulerReportingStub(self._channel())
        request = reporting_pb2.QueueReportRequest(queue_name=queue)
        return self._call("GetQueueReport", lambda kw: stub.GetQueueReport(request, **kw)).report

    def close(self) -> None:
        with self._lock:
            channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            channel.close()
