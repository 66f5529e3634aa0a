"""`armada-flyte view`: the local view (a page on 127.0.0.1) of any Armada, and the view `dev` starts beside
its server.

Pointed at a real Armada, the page follows the job sets named with `--job-set` and those local runs on this
machine recorded for that address (Armada's gRPC API lists queues but not job sets), and says so; pointed at
`armada-flyte dev` (or beside it), it follows every job set of that server, which it can list.
"""

from __future__ import annotations

import argparse
import contextlib
import pathlib
import signal
import threading
from typing import Any, Iterator, Optional


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "view",
        help="serve a page on 127.0.0.1 with an Armada's queues, job sets, jobs and a timeline per node",
        description=(
            "Serve the local view of an Armada (the embedded server or a real one) on 127.0.0.1 until Ctrl-C: "
            "queues and job sets, each job's task, architecture, node group, node, state and times, a timeline "
            "with one lane per node, and each job's log, pod spec and, when queued, why. It reads Armada "
            "through Armada's own APIs, with the connector's settings for TLS and credentials (ARMADA_FLYTE_*)."
        ),
    )
    parser.add_argument(
        "--armada", metavar="HOST:PORT", help="the Armada API (default: the connector's ARMADA_URL or localhost:50051)"
    )
    parser.add_argument(
        "--job-set",
        action="append",
        default=[],
        metavar="QUEUE/JOB_SET",
        help="a job set to follow (repeatable); connector runs use job sets named flyte-<run name>",
    )
    parser.add_argument("--queue", action="append", default=[], help="a queue to list even when Armada lists none")
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--preset", metavar="NAME", help="node-group preset, to name the node group of each node (e.g. gke)"
    )
    source.add_argument("--node-groups", type=pathlib.Path, metavar="FILE", help="node-group YAML, for the same")
    parser.add_argument("--port", type=port, default=0, help="port on 127.0.0.1 (default: a free one, printed)")
    parser.set_defaults(func=run)


def port(text: str) -> int:
    """A TCP port number, 0 for any free one (argparse's type: a bad one is a usage error, not a traceback)."""
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a port number") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{number} is not a port (0 to 65535)")
    return number


def add_dev_arguments(parser: argparse.ArgumentParser) -> None:
    """`armada-flyte dev`'s switches for the view it starts beside the server."""
    parser.add_argument("--no-view", action="store_true", help="don't serve the local view page")
    parser.add_argument(
        "--view-port", type=port, default=0, metavar="PORT", help="the view's port on 127.0.0.1 (default: a free one)"
    )


def run(args: argparse.Namespace) -> int:
    from armada_flyte.connector.config.node_groups import NodeGroups
    from armada_flyte.connector.config.settings import resolve_settings
    from armada_flyte.view import known_job_sets
    from armada_flyte.view.http_server import serving

    given = [_job_set(text) for text in args.job_set]
    settings = resolve_settings(**({"armada_url": args.armada} if args.armada else {}))

    def job_sets() -> list[tuple[str, str]]:
        return given + known_job_sets.recorded(settings.armada_url)

    source = f"given with --job-set or recorded by local runs on this machine ({known_job_sets.default_path()})"
    node_groups = NodeGroups.load(args.node_groups, args.preset) if (args.node_groups or args.preset) else None
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        with serving(
            settings, job_sets, node_groups=node_groups, queues=args.queue, port=args.port, source=source
        ) as view:
            print(f"view: {view.url}", flush=True)
            print(f"reading Armada at {settings.armada_url}; the page says which job sets it follows. Ctrl-C stops.")
            try:
                while not stop.wait(timeout=0.5):
                    pass
            except KeyboardInterrupt:
                pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


def _job_set(text: str) -> tuple[str, str]:
    from armada_flyte.errors import InvalidConfig

    queue, _, job_set = text.partition("/")
    if not queue.strip() or not job_set.strip():
        raise InvalidConfig("--job-set", text, "write it as QUEUE/JOB_SET, e.g. flyte/flyte-r1a2b3")
    return queue.strip(), job_set.strip()


@contextlib.contextmanager
def beside_dev(stack: Any, args: argparse.Namespace) -> Iterator[Optional[str]]:
    """The view of `armada-flyte dev`'s own server, following all its job sets; yields its URL (None: --no-view).

    It reads the server with one of the server's own credentials, so it requires them too (the server's
    `http_guard`, which `stack_view` applies)."""
    if args.no_view:
        yield None
        return
    from armada_flyte.connector.config.settings import settings_from
    from armada_flyte.local.stack import stack_view

    settings = settings_from(
        armada_url=stack.armada_url,
        armada_tls=bool(args.tls_cert),
        armada_ca_cert=args.tls_cert,
        armada_allow_plaintext_auth=True,  # 127.0.0.1 only
        **_client_settings(stack.server.config.credentials),
        **stack.blob_settings(),  # what each task recorded (a0's error.pb): a task that raised reads FAILED
    )
    with stack_view(stack, port=args.view_port, settings=settings) as url:
        yield url


def _client_settings(accepted: Any) -> dict[str, Any]:
    """One of the credentials dev's server accepts (`Credentials`, None without auth), as the connector's settings."""
    if accepted is None:
        return {}
    credential = accepted.one()
    if credential.token:
        return {"auth_token": credential.token}
    return {"auth_username": credential.user, "auth_password": credential.password}
