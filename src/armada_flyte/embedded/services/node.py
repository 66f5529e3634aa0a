"""Armada's Node gRPC service: cancel or preempt the jobs on one node of one executor.

Armada's API server only checks the request and publishes a control-plane event; its scheduler
ingester then selects the jobs (internal/server/node/node.go, scheduleringester/schedulerdb.go).
Here the control plane does both at once. The stubs come from armada_flyte/protos (armada_client
does not ship this service).
"""

from __future__ import annotations

from typing import Any, Optional

import grpc
from google.protobuf import empty_pb2

from armada_flyte.embedded.control_plane.plane import ControlPlane
from armada_flyte.embedded.model.refusals import Refusal, as_status
from armada_flyte.embedded.services.auth import requestor
from armada_flyte.protos import node_pb2, node_pb2_grpc
from armada_flyte.server_credentials import Credentials


class NodeServicer(node_pb2_grpc.NodeServicer):
    def __init__(self, plane: ControlPlane, credentials: Optional[Credentials]):
        self._plane = plane
        self._credentials = credentials

    @as_status
    def CancelOnNode(self, request: node_pb2.NodeCancelRequest, context: grpc.ServicerContext) -> empty_pb2.Empty:
        _check(request, "cancel")
        self._plane.commands.cancel_on_node(*_selection(request), requestor=requestor(self._credentials, context))
        return empty_pb2.Empty()

    @as_status
    def PreemptOnNode(self, request: node_pb2.NodePreemptRequest, context: grpc.ServicerContext) -> empty_pb2.Empty:
        _check(request, "preempt")
        self._plane.commands.preempt_on_node(*_selection(request), requestor=requestor(self._credentials, context))
        return empty_pb2.Empty()


def _selection(request: node_pb2.NodeCancelRequest | node_pb2.NodePreemptRequest) -> tuple[str, str, Any, Any]:
    """The node, its executor, the queues and the priority classes the request selects jobs by."""
    return request.name, request.executor, request.queues, request.priorityClasses


def _check(request: node_pb2.NodeCancelRequest | node_pb2.NodePreemptRequest, action: str) -> None:
    """Armada's checks and words (plain errors, so gRPC UNKNOWN; it calls the node name "executor name")."""
    if not request.name:
        raise Refusal(f"must provide non-empty executor name when determining what to {action}")
    if not request.executor:
        raise Refusal(f"must provide non-empty executor id when determining what to {action}")
