"""`armada-flyte c0`: Flyte's connector service, as `c0` serves it, behind TLS.

Flyte's `c0` (flyte 2.12.1, `flyte/connectors/utils.py`, `_start_grpc_server`) binds its port with
`add_insecure_port` and has no TLS option: whoever reaches the port can create and delete tasks. This
serves the same servicers and connectors (the `flyte.connectors` entry points) on a TLS port, asks
clients for a certificate when given a client CA (mTLS), picks up a renewed certificate without a
restart, and answers gRPC health alone, in plaintext, on a port of its own: the kubelet's gRPC probes
speak no TLS.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import pathlib
import signal
import ssl
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Optional

import grpc

from armada_flyte.errors import InvalidConfig

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 10.0
"""On SIGTERM, calls under way get this long to finish (inside Kubernetes' default 30 s)."""


@dataclass(frozen=True)
class ServingTls:
    """The server's certificate and key (PEM files), and the CA its clients' certificates must chain to."""

    cert: pathlib.Path
    key: pathlib.Path
    client_ca: Optional[pathlib.Path] = None
    """Set: a client without a certificate from this CA is refused (mutual TLS)."""

    def configuration(self) -> grpc.ServerCertificateConfiguration:
        """The files as gRPC reads them, checked first, so a wrong file fails here, naming its option."""
        pem = {}
        for option, path in self.files():
            try:
                pem[option] = path.read_bytes()
            except OSError as exc:
                raise InvalidConfig(
                    option, str(path), f"give a PEM file the connector's user can read ({exc.strerror})"
                ) from None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            context.load_cert_chain(self.cert, self.key)
        except (ssl.SSLError, ValueError):
            raise InvalidConfig(
                "--tls-key", str(self.key), f"give the private key of the certificate in {self.cert} (PEM)"
            ) from None
        if self.client_ca is not None:
            try:
                context.load_verify_locations(cadata=pem["--tls-client-ca"].decode("ascii", "replace"))
            except (ssl.SSLError, ValueError):
                raise InvalidConfig("--tls-client-ca", str(self.client_ca), "give CA certificates in PEM") from None
        return grpc.ssl_server_certificate_configuration(
            [(pem["--tls-key"], pem["--tls-cert"])], root_certificates=pem.get("--tls-client-ca")
        )

    def credentials(self) -> grpc.ServerCredentials:
        """Credentials that read the files again when they change (a renewed Secret), before a new connection."""
        files = _WatchedFiles(self)
        return grpc.dynamic_ssl_server_credentials(
            files.initial, files.fetch, require_client_authentication=self.client_ca is not None
        )

    def files(self) -> list[tuple[str, pathlib.Path]]:
        named = [("--tls-cert", self.cert), ("--tls-key", self.key)]
        return named + ([("--tls-client-ca", self.client_ca)] if self.client_ca is not None else [])


@dataclass
class _WatchedFiles:
    """The TLS files and what they were when last read; gRPC calls `fetch` before each new handshake."""

    tls: ServingTls
    initial: grpc.ServerCertificateConfiguration = field(init=False)
    seen: tuple[tuple[int, int, int], ...] = field(init=False)

    def __post_init__(self) -> None:
        self.initial = self.tls.configuration()
        self.seen = self._signature()

    def _signature(self) -> tuple[tuple[int, int, int], ...]:
        stats = [path.stat() for _, path in self.tls.files()]  # follows a Secret volume's ..data link
        return tuple((s.st_ino, s.st_mtime_ns, s.st_size) for s in stats)

    def fetch(self) -> Optional[grpc.ServerCertificateConfiguration]:
        """The new configuration when the files changed and read well; None (keep serving the old) otherwise."""
        try:
            signature = self._signature()
            if signature == self.seen:
                return None
            fresh = self.tls.configuration()
        except (OSError, InvalidConfig) as exc:  # mid-rotation: one file new, the other not yet
            log.warning("TLS files not reloaded, serving the previous certificate: %s", exc)
            return None
        self.seen = signature
        log.info("TLS certificate reloaded from %s", self.tls.cert)
        return fresh


@dataclass(frozen=True)
class ServeOptions:
    """Where `armada-flyte c0` listens and how; `tls` None serves plaintext, as `c0` does."""

    port: int = 8000
    health_port: int = 8001
    prometheus_port: int = 9090
    tls: Optional[ServingTls] = None
    worker: int = 10
    modules: tuple[str, ...] = ()


async def serve(options: ServeOptions, stop: Optional[asyncio.Event] = None) -> None:
    """Serve the connectors until `stop` is set (or SIGTERM/SIGINT), then drain calls under way."""
    from flyteidl2.connector import service_pb2, service_pb2_grpc
    from grpc_health.v1 import health, health_pb2, health_pb2_grpc
    from prometheus_client import start_http_server

    from armada_flyte.task import flyte_internals

    credentials = options.tls.credentials() if options.tls is not None else None
    flyte_internals.load_connectors(list(options.modules))
    servicers = flyte_internals.connector_servicers
    health_servicer = health.aio.HealthServicer()
    server = grpc.aio.server(ThreadPoolExecutor(max_workers=options.worker))
    service_pb2_grpc.add_AsyncConnectorServiceServicer_to_server(servicers.AsyncConnectorService(), server)
    service_pb2_grpc.add_ConnectorMetadataServiceServicer_to_server(servicers.ConnectorMetadataService(), server)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    if credentials is not None:
        server.add_secure_port(f"[::]:{options.port}", credentials)
    else:
        server.add_insecure_port(f"[::]:{options.port}")
    probes = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, probes)
    probes.add_insecure_port(f"[::]:{options.health_port}")
    for name in [*service_pb2.DESCRIPTOR.services_by_name, ""]:
        full_name = service_pb2.DESCRIPTOR.services_by_name[name].full_name if name else health.OVERALL_HEALTH
        await health_servicer.set(full_name, health_pb2.HealthCheckResponse.SERVING)
    start_http_server(options.prometheus_port)
    await server.start()
    await probes.start()
    flyte_internals.print_connector_metadata()
    transport = "TLS" + (" with client certificates" if options.tls and options.tls.client_ca else "")
    print(
        f"armada-flyte c0: connectors on port {options.port} "
        f"({transport if options.tls else 'plaintext'}), health on {options.health_port} (plaintext), "
        f"metrics on {options.prometheus_port}",
        flush=True,
    )
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    await health_servicer.enter_graceful_shutdown()
    await server.stop(STOP_GRACE_SECONDS)
    await probes.stop(None)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "c0",
        help="serve the connectors as Flyte's c0 does, over TLS, with gRPC health on a plaintext port",
        description=(
            "Flyte's connector service (what `c0` serves: the connectors of the flyte.connectors entry points) "
            "over TLS, reloading a renewed certificate without a restart; gRPC health alone, in plaintext, on "
            "--health-port for the kubelet's probes. Stops on SIGTERM, letting calls under way finish."
        ),
    )
    # c0's own options, spelt as c0 spells them, so swapping `c0` for `armada-flyte c0` keeps them.
    parser.add_argument("--port", type=int, default=8000, help="the connectors' gRPC port (TLS)")
    parser.add_argument("--prometheus_port", type=int, default=9090, help="Prometheus metrics (plain HTTP)")
    parser.add_argument("--worker", type=int, default=10, help="as c0's --worker (its coroutines do not use it)")
    parser.add_argument("--modules", action="append", default=[], help="more modules defining connectors")
    parser.add_argument("--health-port", type=int, default=8001, help="gRPC health alone, plaintext (probes)")
    parser.add_argument("--tls-cert", type=pathlib.Path, metavar="FILE", help="server certificate chain, PEM")
    parser.add_argument("--tls-key", type=pathlib.Path, metavar="FILE", help="its private key, PEM")
    parser.add_argument(
        "--tls-client-ca",
        type=pathlib.Path,
        metavar="FILE",
        help="require client certificates from this CA (mutual TLS; Flyte's backend cannot send one yet)",
    )
    parser.add_argument(
        "--plaintext", action="store_true", help="serve the connectors without TLS, as c0 does (e.g. inside a mesh)"
    )
    parser.set_defaults(func=run)


def options_from(args: argparse.Namespace) -> ServeOptions:
    """The parsed command line as options; refuses a half-given or missing TLS setup, saying what to add."""
    given = [name for name in ("tls_cert", "tls_key", "tls_client_ca") if getattr(args, name) is not None]
    if args.plaintext and given:
        raise InvalidConfig("--plaintext", True, "give either --plaintext or the --tls-* files, not both")
    if not args.plaintext and (args.tls_cert is None or args.tls_key is None):
        raise InvalidConfig(
            "--tls-cert/--tls-key",
            None,
            "give both (e.g. a cert-manager Secret's tls.crt and tls.key; deploy/README.md, step 4), "
            "or --plaintext to serve without TLS as c0 does",
        )
    tls = None if args.plaintext else ServingTls(args.tls_cert, args.tls_key, args.tls_client_ca)
    return ServeOptions(
        port=args.port,
        health_port=args.health_port,
        prometheus_port=args.prometheus_port,
        tls=tls,
        worker=args.worker,
        modules=tuple(args.modules),
    )


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO)
    asyncio.run(serve(options_from(args)))  # a wrong TLS file stops it before any port opens
    return 0
