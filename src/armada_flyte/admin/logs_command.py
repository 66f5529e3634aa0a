"""`armada-flyte logs JOB_ID`: a job's pod log at any time after it ran, or where the log went.

Armada keeps no logs: its Binoculars reads a pod's log from Kubernetes while the pod exists, and Armada's
executor deletes a pod 3 minutes after it succeeds, 10 after it fails and at once when it is cancelled
(`minimumPodAge`, `failedPodExpiry`), so `kubectl logs armada-<job>-0` then answers NotFound. The embedded
server (`armada-flyte dev`) keeps each pod's log with its job (across restarts, with a state folder), so its
Binoculars answers whenever asked. Against a real Armada whose pod is gone, this says where the log went.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

MISSING_POD_CODES = ("NOT_FOUND",)
"""Real Binoculars answers NOT_FOUND once the pod has been cleaned up."""
NO_SERVICE_CODES = ("UNIMPLEMENTED", "UNAVAILABLE", "DEADLINE_EXCEEDED")
"""No Binoculars answered at that address."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "logs",
        help="print a job's pod log (from Armada's Binoculars), or say where it went",
        description=(
            "Print the log of an Armada job's pod, read from Armada's log service (Binoculars). On `armada-flyte "
            "dev` it is there as long as the job is kept; on a real Armada only while the pod exists (its "
            "executor deletes pods minutes after they end): then this says where the log went. Job ids are in "
            "a local run's jobs table and the view. Credentials and TLS: the connector's settings (ARMADA_FLYTE_*)."
        ),
    )
    parser.add_argument("job_id", metavar="JOB_ID", help="the Armada job id (the jobs table's last column)")
    parser.add_argument(
        "--armada", metavar="HOST:PORT", help="the Armada API (default: the connector's ARMADA_URL or localhost:50051)"
    )
    parser.add_argument(
        "--binoculars",
        metavar="HOST:PORT",
        help="Armada's Binoculars (default: ARMADA_FLYTE_BINOCULARS_URL, else the Armada address, as on dev)",
    )
    parser.add_argument("--namespace", help="the pod's namespace (default: the job's own)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from armada_flyte.connector.config.settings import resolve_settings
    from armada_flyte.errors import InvalidConfig
    from armada_flyte.view.armada_reader import ArmadaReader, ArmadaReadError

    job_id = args.job_id.strip()
    if not job_id or not job_id.isalnum() or len(job_id) > 64:
        raise InvalidConfig("JOB_ID", args.job_id, "give an Armada job id, e.g. 01m97bfsw2rnm60d5ke36v8mzg")
    overrides = {"armada_url": args.armada, "binoculars_url": args.binoculars}
    reader = ArmadaReader(resolve_settings(**{name: value for name, value in overrides.items() if value}))
    try:
        details = reader.details([job_id]).get(job_id)
        if details is None:
            return _fail(f"Armada at {reader.url} knows no job {job_id} (check the id and --armada)")
        namespace = args.namespace or details.namespace or "default"
        try:
            lines = reader.log(job_id, namespace)
        except ArmadaReadError as exc:
            return _fail(where_the_log_went(details, namespace, reader.binoculars_url, exc))
    finally:
        reader.close()
    for line in lines:
        print(line)
    if not lines:
        _fail(f"the log of job {job_id} is empty (or its pod has not started yet)")
    return 0


def _fail(text: str) -> int:
    print(f"armada-flyte: {text}", file=sys.stderr)
    return 1


def where_the_log_went(details: Any, namespace: str, binoculars: str, failure: Any) -> str:
    """What to tell a reader when Binoculars can't give the log: the pod is gone, or no Binoculars answered."""
    job_id = details.job_id
    pod = f"armada-{job_id}-0"
    runs = list(details.job_runs)
    latest = runs[0] if runs else None  # Armada lists runs newest first
    ran = f" on node {latest.node} of cluster {latest.cluster}" if latest is not None and latest.node else ""
    if not runs:
        return f"job {job_id} has not run yet, so it has no log"
    if getattr(failure, "code", "") in MISSING_POD_CODES:
        return (
            f"the pod of job {job_id} ({pod} in namespace {namespace}{ran}) is gone, and Armada keeps no logs: "
            "Binoculars reads a pod's log from Kubernetes while the pod exists, and Armada's executor deletes "
            "pods 3 minutes after they succeed, 10 after they fail, at once when cancelled. Its log went where "
            f"that cluster keeps container logs (its log collector: Loki, CloudWatch, Cloud Logging, ...), under "
            f"pod {pod} and label armada_job_id={job_id}. ({failure})"
        )
    if getattr(failure, "code", "") in NO_SERVICE_CODES:
        return (
            f"no Binoculars answered at {binoculars} ({failure}). Give its address with --binoculars (or "
            f"ARMADA_FLYTE_BINOCULARS_URL); while the pod exists, `kubectl logs -n {namespace} {pod}` on the "
            f"cluster that ran it{ran} reads the log too"
        )
    return str(failure)
