"""Lists the job sets the server holds, newest first, and the view beside it (`armada_flyte.job_set_listing`;
not an Armada API)."""

from __future__ import annotations

from typing import Any, Mapping

import grpc

from armada_flyte.embedded.control_plane.plane import ControlPlane
from armada_flyte.job_set_listing import (
    METHOD,
    SERVICE,
    ListedJobSet,
    Listing,
    decode_request,
    encode_response,
)


def job_sets_of(plane: ControlPlane) -> list[ListedJobSet]:
    """Every (queue, job set) with its job count and newest job, the newest job set first."""
    found: dict[tuple[str, str], tuple[int, str]] = {}
    for job in plane.queries.all_jobs():
        count, newest = found.get((job.queue, job.job_set), (0, ""))
        found[(job.queue, job.job_set)] = (count + 1, max(newest, job.id))
    listed = [ListedJobSet(queue, job_set, count, newest) for (queue, job_set), (count, newest) in found.items()]
    return sorted(listed, key=lambda s: s.newest_job, reverse=True)


def job_sets_handler(plane: ControlPlane, about: Mapping[str, str]) -> grpc.GenericRpcHandler:
    """`about` is read at each call: its `view` is set once the view serves."""

    def list_job_sets(request: Any, context: grpc.ServicerContext) -> Listing:
        return Listing(job_sets_of(plane), about.get("view", ""))

    handler = grpc.unary_unary_rpc_method_handler(
        list_job_sets, request_deserializer=decode_request, response_serializer=encode_response
    )
    return grpc.method_handlers_generic_handler(SERVICE, {METHOD: handler})
