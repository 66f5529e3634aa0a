"""`armada-flyte dev`: run the embedded Armada-compatible server (and, by default, an S3 blob
store) until Ctrl-C or SIGTERM, printing the settings the connector and Flyte need."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from typing import Any

from armada_flyte.admin import auth_sources, view_command
from armada_flyte.pod_runner import POD_RUNNER_KINDS

DEFAULT_PORT = 50051
"""Armada's own gRPC port, so clients configured for a local Armada work unchanged."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dev",
        help="run an Armada-compatible server locally, with amd64 and arm64 node sets",
        description=(
            "Start the embedded Armada-compatible server on 127.0.0.1: Armada's gRPC API, a scheduler "
            "and a pod runner that runs each pod, plus an S3-compatible blob store for task data. "
            "Stops cleanly on Ctrl-C or SIGTERM, killing every pod."
        ),
    )
    parser.add_argument(
        "--cluster", metavar="FILE", help="cluster YAML describing node sets (default: amd64 + tainted arm64)"
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port on 127.0.0.1, 0 for any free one (default {DEFAULT_PORT})"
    )
    parser.add_argument(
        "--pod-runner",
        "--executor",  # the old spelling, still accepted
        dest="pod_runner",
        choices=POD_RUNNER_KINDS,
        default="process",
        help="how pods run: local processes or Docker containers (default process; --executor is the old spelling)",
    )
    parser.add_argument("--queue", default="flyte", help="queue created at start (default flyte)")
    parser.add_argument("--no-blob-store", action="store_true", help="don't start the local S3-compatible blob store")
    parser.add_argument("--blob-port", type=int, default=0, help="blob store port on 127.0.0.1 (default: any free one)")
    parser.add_argument(
        "--secret",
        nargs="+",
        action="append",
        default=[],
        metavar=("NAME", "KEY=VALUE"),
        help="a Kubernetes Secret of the embedded cluster, read by pods' secretKeyRef and secret volumes "
        "(e.g. task secrets: --secret my-group api_key=...); repeatable",
    )
    parser.add_argument(
        "--secrets-file",
        metavar="FILE",
        help="YAML of Kubernetes Secret manifests (kind: Secret, data or stringData) for the embedded cluster",
    )
    parser.add_argument(
        "--visibility-delay",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="new jobs read UNKNOWN on the Jobs API for this long, as on a real cluster (default 0)",
    )
    auth_sources.add_arguments(parser)
    parser.add_argument(
        "--ingress-port",
        type=int,
        default=0,
        metavar="PORT",
        help="port on 127.0.0.1 of the ingress controller that routes jobs' ingress hosts to their pods "
        "(default: a free one, printed at start)",
    )
    parser.add_argument(
        "--paused",
        action="store_true",
        help="hold leases: scheduled jobs stay LEASED and no pod starts (load tests of the API and scheduler)",
    )
    parser.add_argument("--tls-cert", metavar="PEM", help="serve TLS with this certificate (with --tls-key)")
    parser.add_argument("--tls-key", metavar="PEM", help="the certificate's private key (with --tls-cert)")
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="write the kubeconfig of the cluster's read-only Kubernetes API here "
        "(default: kubeconfig in the state dir; with --ephemeral, a temporary file)",
    )
    view_command.add_dev_arguments(parser)
    state = parser.add_mutually_exclusive_group()
    state.add_argument(
        "--state-dir",
        metavar="DIR",
        help="keep queues, jobs, events and pod logs here across restarts "
        "(default $XDG_STATE_HOME/armada-flyte/dev, else ~/.local/state/armada-flyte/dev)",
    )
    state.add_argument(
        "--ephemeral", action="store_true", help="keep nothing: state lives in memory and a restart starts empty"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from armada_flyte.architecture import host_architecture_name
    from armada_flyte.cluster.secrets import parse_secret_argument
    from armada_flyte.embedded.services.grpc_server import GIL_SWITCH_SECONDS
    from armada_flyte.embedded.store.persistence import default_state_dir
    from armada_flyte.local.stack import local_stack

    auth, auth_from = auth_sources.credential_specs(args, os.environ)
    auth_sources.forget_environment()
    secrets = dict(parse_secret_argument(name, pairs) for name, *pairs in args.secret)
    state_dir = None if args.ephemeral else (args.state_dir or default_state_dir())

    sys.setswitchinterval(GIL_SWITCH_SECONDS)  # this process is only the server: keep its calls' waits short
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    view = contextlib.ExitStack()
    try:
        with local_stack(
            armada_port=args.port,
            blob_port=args.blob_port,
            queue=args.queue,
            cluster=args.cluster,
            pod_runner=args.pod_runner,
            visibility_delay=args.visibility_delay,
            paused=args.paused,
            blob_store=not args.no_blob_store,
            configure_connector=False,
            auth=auth,
            tls_cert=args.tls_cert,
            tls_key=args.tls_key,
            secrets=secrets,
            secrets_file=args.secrets_file,
            state_dir=state_dir,
            kubeconfig=args.kubeconfig,
            ingress_port=args.ingress_port,
            allowed_hosts=tuple(args.allow_host),
        ) as stack:
            view_url = view.enter_context(view_command.beside_dev(stack, args))
            parts = ("TLS" if args.tls_cert else "", "auth required" if auth else "")
            security = ", ".join(part for part in parts if part)
            shown = f"; {security}" if security else ""
            print(f"Armada-compatible server listening on {stack.armada_url} (pod runner: {args.pod_runner}{shown})")
            if auth:
                print(
                    f"auth: credentials from {', '.join(auth_from)}; the gRPC API, the view (your browser asks), "
                    "the Kubernetes API (its kubeconfig carries one) and the ingress controller each require one; "
                    "the connector needs one too (ARMADA_FLYTE_AUTH_TOKEN, or ARMADA_FLYTE_AUTH_USERNAME and "
                    "ARMADA_FLYTE_AUTH_PASSWORD)"
                )
            print(f"view: {view_url}" if view_url else "view: off (--no-view)")
            print(f"ingress controller on {stack.server.ingress_url} (routes jobs' ingress hosts to their pods)")
            if stack.blob_endpoint:
                print(f"S3-compatible blob store on {stack.blob_endpoint}, bucket {stack.bucket}")
            print("Settings for the connector, a0 and Flyte (examples/multiarch.py reads these):")
            for line in stack.exports():
                print(f"  {line}")
            server = stack.server
            print(f"Kubernetes API (read-only) on {server.kube_api_url}; KUBECONFIG={server.kubeconfig}")
            print(f"state: {state_dir} (kept across restarts)" if state_dir else "state: in memory only (--ephemeral)")
            print(f"queue: {args.queue}")
            if args.paused:
                print("paused: scheduled jobs stay LEASED, no pod starts")
            print(f"secrets: {', '.join(stack.server.secrets.names()) or '(none)'}")
            print("node sets:")
            for node_set in stack.server.node_sets:
                print(f"  {node_set.describe()}")
            if args.pod_runner == "process":
                print(
                    f"pods run as local processes on this {host_architecture_name()} host; a pod placed on another "
                    "architecture runs natively too, and its log and job details say so"
                )
            print("Press Ctrl-C to stop.", flush=True)
            try:
                while not stop.wait(timeout=0.5):
                    pass
            except KeyboardInterrupt:
                pass
        print("stopped", flush=True)
    finally:
        view.close()
        signal.signal(signal.SIGTERM, previous)
    return 0
