"""`armada-flyte dev`: run the embedded Armada-compatible server until Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import signal
import threading
from typing import Any

DEFAULT_PORT = 50051
"""Armada's own gRPC port, so clients configured for a local Armada work unchanged."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dev",
        help="run an Armada-compatible server locally, with amd64 and arm64 node groups",
        description=(
            "Start the embedded Armada-compatible server on 127.0.0.1: Armada's gRPC API, a scheduler "
            "and an executor that runs each pod. Stops cleanly on Ctrl-C or SIGTERM, killing every pod."
        ),
    )
    parser.add_argument("--cluster", metavar="FILE", help="cluster YAML describing node groups (default: amd64 + tainted arm64)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port on 127.0.0.1, 0 for any free one (default {DEFAULT_PORT})")
    parser.add_argument("--executor", choices=("process", "docker"), default="process", help="how pods run (default process)")
    parser.add_argument("--queue", default="flyte", help="queue created at start (default flyte)")
    parser.add_argument(
        "--visibility-delay",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="new jobs read UNKNOWN on the Jobs API for this long, as on a real cluster (default 0)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from armada_flyte.dev.embedded import EmbeddedArmada
    from armada_flyte.dev.executors.base import host_architecture

    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        armada = EmbeddedArmada(
            cluster=args.cluster,
            port=args.port,
            executor=args.executor,
            queues=(args.queue,),
            visibility_delay=args.visibility_delay,
        )
        with armada:
            print(f"Armada-compatible server listening on {armada.url} (executor: {args.executor})")
            print(f"  export ARMADA_URL={armada.url}")
            print(f"queue: {args.queue}")
            print("node groups:")
            for group in armada.node_groups:
                print(f"  {group.describe()}")
            if args.executor == "process":
                print(
                    f"pods run as local processes on this {host_architecture()} host; a pod placed on another "
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
        signal.signal(signal.SIGTERM, previous)
    return 0
