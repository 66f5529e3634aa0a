"""Checks against a running Armada: reachable, credentials accepted, queue exists.

Uses armada_client's sync `ArmadaClient` with the connector's own credentials and TLS settings,
so a green doctor means the connector, configured the same way, gets through too.
"""

from __future__ import annotations

import collections
from typing import Any, Callable

import grpc
from armada_client.armada import health_pb2, submit_pb2
from armada_client.client import ArmadaClient
from google.protobuf import empty_pb2

from armada_flyte.admin.doctor.findings import Finding, passed, problem
from armada_flyte.connector.armada.api import ArmadaApi
from armada_flyte.connector.armada.channels import open_channel
from armada_flyte.connector.config.settings import ConnectorConfig
from armada_flyte.errors import ArmadaAuthError
from armada_flyte.health_reasons import reason_in

_UNREACHABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def check_armada(url: str, queue: str, settings: ConnectorConfig) -> list[Finding]:
    """Reachability first; credentials and the queue only if Armada answered at all."""
    try:
        channel = _channel(url, settings)
    except ArmadaAuthError as exc:  # the token source itself failed (token endpoint, token command)
        return [
            problem(
                "armada.auth",
                f"could not get credentials for Armada at {url}: {exc}",
                "fix the credential settings named above; the connector would fail the same way",
            )
        ]
    except OSError as exc:
        return [
            problem(
                "armada.reachable",
                f"can't read the CA bundle {settings.connection.armada_ca_cert}: {exc.strerror or exc}",
                "point ARMADA_FLYTE_ARMADA_CA_CERT at a readable PEM file, or unset it to use the system roots",
            )
        ]
    try:
        client = ArmadaClient(channel)
        reachable = _reachable(client, url, settings)
        if not reachable[0].ok:
            return reachable
        return [*reachable, *_auth_and_queue(client, url, queue, settings)]
    finally:
        channel.close()


def _reachable(client: ArmadaClient, url: str, settings: ConnectorConfig) -> list[Finding]:
    """Whether Armada answers (first), and, if it says why it is NOT_SERVING, that reason as a problem of
    its own: such a server still answers reads, so the later checks run."""
    transport = "TLS" if settings.connection.armada_tls else "plaintext"
    try:
        response, call = client.submit_stub.Health.with_call(empty_pb2.Empty())
    except grpc.RpcError as exc:
        if exc.code() in _UNREACHABLE:
            return [
                problem(
                    "armada.reachable",
                    f"Armada at {url} ({transport}) did not answer: {exc.code().name}: {exc.details()}",
                    "check the address (host:port of Armada's gRPC API, ARMADA_URL), that the port is open from "
                    "here, and that ARMADA_FLYTE_ARMADA_TLS matches the server (TLS or plaintext)",
                )
            ]
        answered = f"Armada at {url} ({transport}) answered ({exc.code().name} to a health check)"
        return [passed("armada.reachable", answered)]
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)
    answered = passed("armada.reachable", f"Armada at {url} ({transport}) answered: {status}")
    if response.status == health_pb2.HealthCheckResponse.SERVING:
        return [answered]
    reason = reason_in(call.trailing_metadata())
    if reason is not None:
        why, fix = reason
        return [answered, problem("armada.serving", f"Armada at {url} reports {status}: {why}", fix)]
    return [
        problem(
            "armada.reachable",
            f"Armada at {url} answered but reports {status}",
            "check the Armada server's logs; a dependency (Pulsar, Postgres, Redis) may be down",
        )
    ]


def _auth_and_queue(client: ArmadaClient, url: str, queue: str, settings: ConnectorConfig) -> list[Finding]:
    credentials = _credentials(settings)
    sent = credentials or "no credentials"
    try:
        _get_queue(client, queue)
    except grpc.RpcError as exc:
        code, details = exc.code(), exc.details() or ""
        if code == grpc.StatusCode.UNAUTHENTICATED:
            return [_rejected(url, credentials, details)]
        queue_missing = code == grpc.StatusCode.NOT_FOUND or (
            code == grpc.StatusCode.PERMISSION_DENIED and "could not find queue" in details
        )
        if code == grpc.StatusCode.PERMISSION_DENIED and not queue_missing:
            return [
                problem(
                    "armada.auth",
                    f"Armada at {url} accepted {sent} but refused access to queue {queue!r}: {details}",
                    f"grant this identity permission on queue {queue!r} (the queue's permissions, or the "
                    f"server's permissionGroupMapping), or configure credentials that have it",
                )
            ]
        if not queue_missing:
            return [
                problem(
                    "armada.queue",
                    f"asking Armada for queue {queue!r} failed: {code.name}: {details}",
                    "retry; if it persists, check the Armada server's logs",
                )
            ]
        return [
            passed("armada.auth", f"Armada accepted {sent}"),
            problem(
                "armada.queue",
                f"queue {queue!r} does not exist on Armada at {url}: every submission to it fails "
                "with PERMISSION_DENIED",
                f"create it (armadactl create queue {queue}), or make the tasks use an existing queue "
                f"(ArmadaConfig(queue=...) or queue in [tool.armada-flyte])",
            ),
        ]
    return [passed("armada.auth", f"Armada accepted {sent}"), passed("armada.queue", f"queue {queue!r} exists")]


def _rejected(url: str, credentials: str, details: str) -> Finding:
    if not credentials:
        return problem(
            "armada.auth",
            f"Armada at {url} requires credentials and none are configured: UNAUTHENTICATED: {details}",
            "set ARMADA_FLYTE_AUTH_TOKEN (bearer token), or ARMADA_FLYTE_AUTH_USERNAME and "
            "ARMADA_FLYTE_AUTH_PASSWORD (basic auth), e.g. in the connector's Secret",
        )
    return problem(
        "armada.auth",
        f"Armada at {url} rejected the credentials ({credentials}): UNAUTHENTICATED: {details}",
        "replace them with valid ones (the connector's Secret); a token may have expired",
    )


def _get_queue(client: ArmadaClient, queue: str) -> submit_pb2.Queue:
    """GetQueue on the QueueService, falling back to the Submit service's copy on servers without it."""
    try:
        return client.get_queue(queue)
    except grpc.RpcError as exc:
        if exc.code() != grpc.StatusCode.UNIMPLEMENTED:
            raise
    return client.submit_stub.GetQueue(submit_pb2.QueueGetRequest(name=queue))


def _credentials(settings: ConnectorConfig) -> str:
    connection = settings.connection
    if connection.auth_token is not None:
        return "a bearer token (ARMADA_FLYTE_AUTH_TOKEN)"
    if connection.auth_username is not None:
        return f"basic auth as {connection.auth_username!r} (ARMADA_FLYTE_AUTH_USERNAME)"
    if connection.oidc_client_id is not None:
        client = connection.oidc_client_id
        return f"an OIDC client-credentials token for client {client!r} (ARMADA_FLYTE_OIDC_CLIENT_ID)"
    if connection.auth_exec_cmd is not None:
        return f"a token printed by {connection.auth_exec_cmd!r} (ARMADA_FLYTE_AUTH_EXEC_CMD)"
    return ""


def _authorization(settings: ConnectorConfig) -> list[tuple[str, str]]:
    """Exactly the `authorization` header the connector sends, so the doctor tests what it will use."""
    return ArmadaApi(settings).auth_metadata()


def _channel(url: str, settings: ConnectorConfig) -> grpc.Channel:
    channel = open_channel(settings.connection, url, aio=False)
    defaults = _CallDefaults(_authorization(settings), settings.connection.grpc_timeout_seconds)
    return grpc.intercept_channel(channel, defaults)


class _Details(
    collections.namedtuple(
        "_Details", ("method", "timeout", "metadata", "credentials", "wait_for_ready", "compression")
    ),
    grpc.ClientCallDetails,
):
    pass


class _CallDefaults(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    """Adds the credentials and a deadline to every call (ArmadaClient's methods take neither)."""

    def __init__(self, metadata: list[tuple[str, str]], timeout: float):
        self._metadata = metadata
        self._timeout = timeout

    def _details(self, details: grpc.ClientCallDetails) -> _Details:
        metadata = [*(details.metadata or ()), *self._metadata]
        return _Details(
            details.method,
            details.timeout if details.timeout is not None else self._timeout,
            metadata,
            details.credentials,
            getattr(details, "wait_for_ready", None),
            getattr(details, "compression", None),
        )

    def intercept_unary_unary(
        self, continuation: Callable[..., Any], details: grpc.ClientCallDetails, request: Any
    ) -> Any:
        return continuation(self._details(details), request)

    def intercept_unary_stream(
        self, continuation: Callable[..., Any], details: grpc.ClientCallDetails, request: Any
    ) -> Any:
        return continuation(self._details(details), request)
