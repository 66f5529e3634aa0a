"""One Armada job as plain data, and the labels and annotations the connector writes on every job
(the local view reads them back)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

LABEL_CONNECTOR = "flyte.org/connector"
LABEL_PROJECT = "flyte.org/project"
LABEL_DOMAIN = "flyte.org/domain"
LABEL_RUN = "flyte.org/run"
LABEL_ACTION = "flyte.org/action"
LABEL_ARCH = "armada-flyte.io/architecture"
PREFERENCE_JOB_SET = "-prefer-"
"""What the job set of a task with an architecture preference carries (`<job set>-prefer-<hash>`): its own."""
ANNOTATION_ARCH_SOURCE = "armada-flyte.io/architecture-source"
ANNOTATION_NODE_GROUP = "armada-flyte.io/node-group"
ANNOTATION_ANY_OF = "armada-flyte.io/architectures"
"""For `architecture="any"`: the architectures the job may run on, comma-separated."""
ANNOTATION_OUTPUTS = "armada-flyte.io/outputs-path"
ANNOTATION_TASK = "armada-flyte.io/task"
ANNOTATION_FLYTE_PROJECT = "armada-flyte.io/flyte-project"
ANNOTATION_FLYTE_DOMAIN = "armada-flyte.io/flyte-domain"
ANNOTATION_FLYTE_RUN = "armada-flyte.io/flyte-run"
ANNOTATION_FLYTE_ACTION = "armada-flyte.io/flyte-action"
"""The run's identity exactly as Flyte spells it (labels must be sanitised, annotations need not be),
for links from Lookout back to the Flyte run (deploy/lookout/job-links.yaml)."""
ANNOTATION_EXTERNAL_JOB_URI = "armadaproject.io/externalJobUri"
"""Armada's legacy spelling of `external_job_uri`, which Armada's Airflow operator sets; kept
beside the field so the URI shows in the job's annotations (GetJobDetails, Lookout) too."""


@dataclass(frozen=True)
class JobRequest:
    """One Armada job item, as plain data; the client wrapper turns it into protos.

    Built whole by one function (`submit.pod.job_request`) and never edited after: its dicts are
    the request's own, so nothing else holds them."""

    pod_spec: dict[str, Any]
    labels: dict[str, str]
    annotations: dict[str, str]
    namespace: str
    priority: float
    client_id: str
    outputs_path: str
    gang_id: Optional[str] = None
    external_job_uri: str = ""
