"""Armada's Binoculars log service: a job's pod log, the lines the executor captured."""

from __future__ import annotations

import datetime as dt
import re
from typing import Optional

import grpc
from armada_client.armada import binoculars_pb2, binoculars_pb2_grpc

from armada_flyte.embedded.control_plane.plane import ControlPlane
from armada_flyte.embedded.model.refusals import InvalidArgument, NotFound, as_status

_FRACTION = re.compile(r"\.(\d+)")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


class BinocularsServicer(binoculars_pb2_grpc.BinocularsServicer):
    def __init__(self, plane: ControlPlane):
        self._plane = plane

    @as_status
    def Logs(self, request: binoculars_pb2.LogRequest, context: grpc.ServicerContext) -> binoculars_pb2.LogResponse:
        jobs = self._plane.queries.jobs([request.job_id])
        if not jobs:
            raise NotFound(f"job {request.job_id} not found")
        run = jobs[0].latest_run
        if run is None:
            return binoculars_pb2.LogResponse()
        options = request.log_options
        tail = options.tailLines if options.HasField("tailLines") and options.tailLines > 0 else None
        lines = run.log.lines(since_us=parse_rfc3339(request.since_time), tail=tail)
        return binoculars_pb2.LogResponse(
            log=[binoculars_pb2.LogLine(timestamp=format_rfc3339(line.at_us), line=line.text) for line in lines]
        )


def format_rfc3339(at_us: int) -> str:
    moment = _EPOCH + dt.timedelta(microseconds=at_us)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_rfc3339(text: str) -> Optional[int]:
    """Microseconds since the epoch for an RFC 3339 time (nanoseconds allowed), None for the empty string."""
    if not text:
        return None
    normalised = _FRACTION.sub(lambda m: "." + m.group(1)[:6].ljust(6, "0"), text.strip()).replace("Z", "+00:00")
    try:
        moment = dt.datetime.fromisoformat(normalised)
    except ValueError:
        raise InvalidArgument(f"since_time {text!r} is not an RFC 3339 time such as 2024-05-01T12:00:00Z") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return (moment - _EPOCH) // dt.timedelta(microseconds=1)
