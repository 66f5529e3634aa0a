"""The gRPC server: Armada's services (and the standard health service) on a port of 127.0.0.1.

It is a grpc.aio server on an event loop of its own thread. Event streams are coroutines, so a
waiting watch holds no thread; the other (synchronous) servicer methods run on a worker pool.
Optionally behind Armada-style authentication (`auth.Credentials`) and TLS (a certificate and
key in PEM files), so clients' TLS and credentials are tested against the real API.
"""

from __future__ import annotations

import asyncio
import functools
import pathlib
import threading
from concurrent import futures
from dataclasses import dataclass
from typing import Any, Optional

import grpc
from armada_client.armada import binoculars_pb2_grpc, event_pb2_grpc, job_pb2_grpc, submit_pb2_grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from armada_flyte.embedded.control_plane.plane import ControlPlane
from armada_flyte.embedded.services.auth import RequireAuth
from armada_flyte.embedded.services.binoculars import BinocularsServicer
from armada_flyte.embedded.services.call_counts import CallCounter
from armada_flyte.embedded.services.events import EventServicer
from armada_flyte.embedded.services.job_sets import job_sets_handler
from armada_flyte.embedded.services.jobs import JobsServicer
from armada_flyte.embedded.services.node import NodeServicer
from armada_flyte.embedded.services.reporting import SchedulerReportingServicer
from armada_flyte.embedded.services.submit import QueueServicer, SubmitServicer
from armada_flyte.embedded.store.write_health import WriteFailure
from armada_flyte.errors import InvalidConfig
from armada_flyte.protos import node_pb2_grpc, scheduler_reporting_pb2_grpc
from armada_flyte.server_credentials import Credentials

HOST = "127.0.0.1"
WORKER_THREADS = 64
"""Threads for the unary calls; event streams don't use them."""
MAX_CONCURRENT_STREAMS = 100_000
"""HTTP/2 streams one connection may hold open: one client may watch thousands of job sets."""
MAX_PENDING_REQUESTS = 100_000
"""Calls arrived but not yet picked up: gRPC cancels those beyond 1000 (soft) / 3000 (hard) by default,
which a burst of new watches reaches."""

GIL_SWITCH_SECONDS = 0.0005
"""How long a thread may hold the GIL while another waits for it, in a process that is only the server
(`armada-flyte dev`; `sys.setswitchinterval`). Python's 5 ms default lets a thread busy with a big
SubmitJobs batch or a state write keep a status call waiting 5 ms at each of its hops (event loop,
handler, reply) while a backlog pours in."""

SERVICE_NAMES = (
    "api.Submit",
    "api.QueueService",
    "api.Jobs",
    "api.Event",
    "api.Node",
    "binoculars.Binoculars",
    "schedulerobjects.SchedulerReporting",
)
WRITING_SERVICES = ("", "api.Submit", "api.QueueService")
"""The health service names reported NOT_SERVING while the state can't be written ("" is the whole server)."""
_MAX_MESSAGE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class TlsFiles:
    """The server's certificate (PEM, may include its chain) and private key (PEM)."""

    cert: pathlib.Path
    key: pathlib.Path

    def server_credentials(self) -> grpc.ServerCredentials:
        pairs = []
        for what, path in (("tls_cert", self.cert), ("tls_key", self.key)):
            try:
                pairs.append(pathlib.Path(path).read_bytes())
            except OSError as exc:
                raise InvalidConfig(what, str(path), f"give a readable PEM file ({exc.strerror})") from None
        cert, key = pairs
        return grpc.ssl_server_credentials([(key, cert)])


class GrpcServer:
    """The running server; `stop` ends its calls (waiting up to `grace` seconds) and its loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, server: grpc.aio.Server, thread: threading.Thread):
        self._loop = loop
        self._server = server
        self._thread = thread

    def stop(self, grace: Optional[float]) -> None:
        if not self._loop.is_closed():
            asyncio.run_coroutine_threadsafe(self._server.stop(grace), self._loop).result()
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()


def start_grpc_server(
    plane: ControlPlane,
    port: int = 0,
    *,
    credentials: Optional[Credentials] = None,
    tls: Optional[TlsFiles] = None,
    counter: Optional[CallCounter] = None,
    about: Optional[dict[str, str]] = None,
) -> tuple[GrpcServer, int]:
    """Serve `plane` on 127.0.0.1:`port` (0 picks a free port); returns the server and the bound port.
    `counter`, if given, counts every call by method; `about` is what the job-set listing adds (the view)."""
    server_credentials = tls.server_credentials() if tls is not None else None
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=_run_loop, args=(loop,), name="armada-api-loop", daemon=True)
    thread.start()
    try:
        started = _start(plane, port, credentials, server_credentials, counter, about if about is not None else {})
        server, bound = asyncio.run_coroutine_threadsafe(started, loop).result()
    except BaseException:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        raise
    return GrpcServer(loop, server, thread), bound


def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        loop.close()


async def _start(
    plane: ControlPlane,
    port: int,
    credentials: Optional[Credentials],
    server_credentials: Optional[grpc.ServerCredentials],
    counter: Optional[CallCounter],
    about: dict[str, str],
) -> tuple[grpc.aio.Server, int]:
    server = grpc.aio.server(
        migration_thread_pool=futures.ThreadPoolExecutor(max_workers=WORKER_THREADS, thread_name_prefix="armada-api"),
        interceptors=[
            *([counter] if counter is not None else []),
            *([RequireAuth(credentials)] if credentials is not None else []),
        ],
        options=_options(),
    )
    submit_pb2_grpc.add_SubmitServicer_to_server(SubmitServicer(plane, credentials), server)
    submit_pb2_grpc.add_QueueServiceServicer_to_server(QueueServicer(plane, credentials), server)
    job_pb2_grpc.add_JobsServicer_to_server(JobsServicer(plane), server)
    event_pb2_grpc.add_EventServicer_to_server(EventServicer(plane), server)
    node_pb2_grpc.add_NodeServicer_to_server(NodeServicer(plane, credentials), server)
    binoculars_pb2_grpc.add_BinocularsServicer_to_server(BinocularsServicer(plane), server)
    scheduler_reporting_pb2_grpc.add_SchedulerReportingServicer_to_server(SchedulerReportingServicer(plane), server)
    server.add_generic_rpc_handlers((job_sets_handler(plane, about),))  # not Armada's: `armada-flyte view` of dev
    health_servicer = health.HealthServicer()
    for name in ("", *SERVICE_NAMES):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    plane.write_health.listen(functools.partial(_report_writes, health_servicer))
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    address = f"{HOST}:{port}"
    try:
        if server_credentials is None:
            bound = server.add_insecure_port(address)
        else:
            bound = server.add_secure_port(address, server_credentials)
    except RuntimeError:
        bound = 0
    if not bound:
        raise InvalidConfig("port", port, f"{HOST}:{port} is taken; pick another port, or 0 for any free one")
    await server.start()
    return server, bound


def _report_writes(servicer: health.HealthServicer, failure: Optional[WriteFailure]) -> None:
    """While the state can't be written, the server and the services that take new work are NOT_SERVING;
    reads (Jobs, Event, Binoculars, ...) go on SERVING."""
    status = health_pb2.HealthCheckResponse.SERVING if failure is None else health_pb2.HealthCheckResponse.NOT_SERVING
    for name in WRITING_SERVICES:
        servicer.set(name, status)


def _options() -> list[tuple[str, Any]]:
    return [
        ("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
        ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES),
        ("grpc.max_concurrent_streams", MAX_CONCURRENT_STREAMS),
        ("grpc.server.max_pending_requests", MAX_PENDING_REQUESTS),
        ("grpc.server.max_pending_requests_hard_limit", MAX_PENDING_REQUESTS),
        ("grpc.so_reuseport", 0),
        # Armada's keepaliveEnforcementPolicy (minTime 10s, permitWithoutStream: true): clients may ping
        # every 10 s, with or without a call open (gRPC's own default refuses pings under 5 minutes apart).
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
        ("grpc.keepalive_permit_without_calls", 1),
    ]
