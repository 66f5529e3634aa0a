"""`armada-flyte executor`: an Armada executor for real Armada's scheduler, with no Kubernetes.

It reports the cluster file's node sets (amd64 and arm64, with their labels, taints and
allocatable resources) to the scheduler's executor API, so real Armada decides where each job
runs, and runs the leased pods on this machine with the pod runner, until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import logging
import math
import pathlib
from typing import Any

from armada_flyte.admin.until_stopped import run_until_stopped
from armada_flyte.errors import InvalidConfig
from armada_flyte.executor.scheduler_connection import SchedulerConnection, scheduler_connection
from armada_flyte.pod_runner import POD_RUNNER_KINDS


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "executor",
        help="run leased pods for a real Armada scheduler, reporting amd64 and arm64 node sets",
        description=(
            "Lease runs from a real Armada (v0.22.7) scheduler over its executor API and run their pods "
            "on this machine. The cluster file's nodes are reported with their labels, taints and "
            "allocatable resources, so Armada's scheduler places each job. Needs the executor API stubs "
            "(scripts/build-executor-stubs.sh). Stops on Ctrl-C or SIGTERM, giving running runs back to Armada."
        ),
    )
    parser.add_argument(
        "--scheduler",
        required=True,
        metavar="HOST:PORT",
        help="the scheduler's executor API (Armada's default: :50052)",
    )
    parser.add_argument(
        "--tls", action="store_true", help="reach the scheduler over TLS (needed off this machine unless --insecure)"
    )
    parser.add_argument("--ca-cert", metavar="PEM", help="CA bundle for the scheduler's certificate (with --tls)")
    parser.add_argument("--auth-username", metavar="USER", help="basic-auth user (with --auth-password-file)")
    parser.add_argument(
        "--auth-password-file",
        metavar="FILE",
        help="file holding the basic-auth password (a file: arguments are visible to every local user)",
    )
    parser.add_argument("--auth-token-file", metavar="FILE", help="file holding a bearer token")
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="allow plaintext to a scheduler on another machine (only on a private network you trust)",
    )
    parser.add_argument(
        "--cluster", metavar="FILE", help="cluster YAML describing node sets (default: amd64 + tainted arm64)"
    )
    parser.add_argument(
        "--pod-runner", choices=POD_RUNNER_KINDS, default="process", help="how pods run (default process)"
    )
    parser.add_argument(
        "--lease-interval",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="seconds between lease requests (default 1)",
    )
    parser.add_argument(
        "--pod-logs", metavar="DIR", help="write each pod's log here when it ends (<namespace>/<pod>.log)"
    )
    parser.add_argument(
        "--secrets-file",
        metavar="FILE",
        help="Kubernetes Secret manifests (YAML) that pods' secretKeyRef, envFrom and secret volumes read "
        "(default: none; a pod referencing a missing Secret fails without starting)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    connection = _check(args)
    from armada_flyte.cluster.cluster_file import Cluster
    from armada_flyte.cluster.secrets import SecretStore
    from armada_flyte.executor.lease_loop import ArmadaExecutor, LoopSettings
    from armada_flyte.pod_runner import make_pod_runner

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    cluster = Cluster.from_yaml(args.cluster) if args.cluster else Cluster.default()
    options: dict[str, object] = {"fence": cluster.pod_fence}
    if args.pod_runner == "process":
        options.update(images=cluster.images, cpu_shares=cluster.cpu_shares)
    runner = make_pod_runner(args.pod_runner, **options)
    secrets = SecretStore()
    if args.secrets_file:
        secrets.load_file(args.secrets_file)
    executor = ArmadaExecutor(
        connection,
        cluster,
        runner,
        LoopSettings(lease_interval=args.lease_interval),
        pathlib.Path(args.pod_logs) if args.pod_logs else None,
        secrets,
    )
    where = f"executor {cluster.executor} (pool {cluster.pool})"
    transport = "TLS" if connection.tls else "plaintext"
    identity = "with credentials" if connection.authorization else "without credentials"
    print(f"{where} leasing from {args.scheduler} ({transport}, {identity}); pods run as {args.pod_runner}")
    print("node sets:")
    for node_set in cluster.node_sets:
        print(f"  {node_set.describe()}")
    if args.secrets_file:
        print(f"secrets from {args.secrets_file}: {', '.join(secrets.names()) or 'none'}")
    print("Press Ctrl-C to stop.", flush=True)
    return run_until_stopped(executor, "executor")


def _check(args: argparse.Namespace) -> SchedulerConnection:
    host, _, port = args.scheduler.rpartition(":")
    if not host or not port.isdigit():
        raise InvalidConfig("--scheduler", args.scheduler, "give the scheduler's executor API as HOST:PORT")
    if not (math.isfinite(args.lease_interval) and args.lease_interval > 0):
        raise InvalidConfig("--lease-interval", args.lease_interval, "give a number of seconds above 0")
    return scheduler_connection(
        args.scheduler,
        tls=args.tls,
        ca_cert=args.ca_cert,
        username=args.auth_username,
        password_file=args.auth_password_file,
        token_file=args.auth_token_file,
        insecure=args.insecure,
    )
