"""A minimal Armada API with authentication, for the doctor's credential checks.

The embedded server has no authentication, so credentials are tested against this: Armada's
generated Submit and QueueService servicers (Health and GetQueue only) behind a server
interceptor that checks the `authorization` header the way Armada does. Unknown credentials
get UNAUTHENTICATED; a known user without rights on a queue gets PERMISSION_DENIED.
"""

from __future__ import annotations

import base64
from concurrent import futures
from typing import Any, Callable, Iterator, Optional

import grpc
from armada_client.armada import health_pb2, submit_pb2, submit_pb2_grpc
from google.protobuf import empty_pb2

import armada_flyte  # noqa: F401  (aliases google.api protos before armada_client loads)

TOKENS = {"good-token": "alice", "viewer-token": "viewer"}
PASSWORDS = {"bob": "s3cret"}
PERMITTED = {"alice", "bob"}
_IDENTITY = "armada-identity"


def _identity(metadata: dict[str, str]) -> Optional[str]:
    header = metadata.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer":
        return TOKENS.get(value)
    if scheme.lower() == "basic":
        user, _, password = base64.b64decode(value).decode().partition(":")
        return user if PASSWORDS.get(user) == password else None
    return None


class _RequireAuth(grpc.ServerInterceptor):
    def intercept_service(self, continuation: Callable[..., Any], details: grpc.HandlerCallDetails) -> Any:
        metadata = dict(details.invocation_metadata or ())
        if _identity(metadata) is None:

            def refuse(request: Any, context: grpc.ServicerContext) -> Any:
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "request could not be authenticated")

            return grpc.unary_unary_rpc_method_handler(refuse)
        return continuation(details)


class _Queues:
    def __init__(self, queues: set[str]):
        self._queues = queues

    def GetQueue(self, request: submit_pb2.QueueGetRequest, context: grpc.ServicerContext) -> submit_pb2.Queue:
        user = _identity(dict(context.invocation_metadata()))
        if user not in PERMITTED:
            context.abort(
                grpc.StatusCode.PERMISSION_DENIED, f'user "{user}" lacks permission to view queue "{request.name}"'
            )
        if request.name not in self._queues:
            context.abort(grpc.StatusCode.NOT_FOUND, f'error: could not find queue "{request.name}"')
        return submit_pb2.Queue(name=request.name, priority_factor=1)


class _Submit(_Queues, submit_pb2_grpc.SubmitServicer):
    def Health(self, request: empty_pb2.Empty, context: grpc.ServicerContext) -> health_pb2.HealthCheckResponse:
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)


class _QueueService(_Queues, submit_pb2_grpc.QueueServiceServicer):
    pass


def serve(queues: set[str], queue_service: bool = True) -> Iterator[str]:
    """Run the server on 127.0.0.1; yields its host:port, stops it afterwards."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), interceptors=[_RequireAuth()])
    submit_pb2_grpc.add_SubmitServicer_to_server(_Submit(queues), server)
    if queue_service:
        submit_pb2_grpc.add_QueueServiceServicer_to_server(_QueueService(queues), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(grace=None)
