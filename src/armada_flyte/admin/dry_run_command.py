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
            "Serialise a task as `flyte run` would, apply project defaults, the node groups and the connector's "
            "settings, and print the SubmitJobs request the connector would send: node selector, tolerations, "
            "affinity, resources, labels and annotations (for an architecture preference, the request of each "
            "step: create's, then each later architecture's). Nothing is submitted."
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
    from armada_flyte.connector.config.node_groups import NodeGroups
    from armada_flyte.connector.config.settings import resolve_settings
    from armada_flyte.connector.submit.plan import SubmitSettings

    root = args.root.resolve()
    task = load_task(args.task, root)
    settings = resolve_settings()
    if args.node_groups is None and args.preset is None:
        groups = settings.node_groups()
    else:
        groups = NodeGroups.load(args.node_groups, args.preset)
    submission = render_submission(task, SubmitSettings.of(settings, groups), root)
    print(json.dumps(submission, indent=2))
    return 0
