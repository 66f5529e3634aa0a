"""`armada-flyte dry-run MODULE:TASK`: print the Armada submission a task would make."""

from __future__ import annotations

import argparse
import json
import pathlib
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dry-run",
        help="print the Armada job a task would submit (pod spec, placement), without submitting",
        description=(
            "Serialise a task as `flyte run` would, apply project defaults and the node groups, and print "
            "the SubmitJobs request the connector would send: node selector, tolerations, affinity, "
            "resources, labels and annotations. Nothing is submitted."
        ),
    )
    parser.add_argument(
        "task", metavar="MODULE:TASK", help="the task, e.g. multiarch:train (module relative to --root)"
    )
    parser.add_argument(
        "--root", type=pathlib.Path, default=pathlib.Path.cwd(), help="the project folder (default: here)"
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--preset", metavar="NAME", help="node-group preset (gke, eks-karpenter, aks, embedded, generic)"
    )
    source.add_argument("--node-groups", type=pathlib.Path, metavar="FILE", help="node-group YAML")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from armada_flyte.admin.dry_run import load_task, render_submission
    from armada_flyte.connector.node_groups import NodeGroups
    from armada_flyte.connector.settings import resolve_settings

    if args.node_groups is None and args.preset is None:
        groups = resolve_settings().node_groups()
    else:
        groups = NodeGroups.load(args.node_groups, args.preset)
    root = args.root.resolve()
    print(json.dumps(render_submission(load_task(args.task, root), groups, root), indent=2))
    return 0
