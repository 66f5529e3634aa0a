"""The metadata Armada's executor puts on every pod it creates, so pods see what they would see on a cluster.

Read from Armada's executor (armadaproject/armada `internal/executor/util/kubernetes_object.go`,
`CreatePodFromExecutorApiJob`; names in `internal/executor/domain/pod_metadata.go` and
`internal/common/constants/constants.go`): the job's own labels plus `armada_job_id`,
`armada_job_run_id`, `armada_queue_id`, `armada_pod_number` and `armada_pod_count`; the job's own
annotations plus `armada_jobset_id` and `armada_owner`; and in every container (init ones too),
unless it defines them itself, the variables ARMADA_JOB_ID, ARMADA_QUEUE and ARMADA_JOB_SET_ID
(and ARMADA_GANG_ID / ARMADA_GANG_CARDINALITY for gang members).
"""

from __future__ import annotations

from typing import Mapping

JOB_ID_LABEL = "armada_job_id"
RUN_ID_LABEL = "armada_job_run_id"
QUEUE_LABEL = "armada_queue_id"
POD_NUMBER_LABEL = "armada_pod_number"
POD_COUNT_LABEL = "armada_pod_count"
JOB_SET_ANNOTATION = "armada_jobset_id"
OWNER_ANNOTATION = "armada_owner"

_GANG_VARIABLES = (
    ("armadaproject.io/gangId", "ARMADA_GANG_ID"),
    ("armadaproject.io/gangCardinality", "ARMADA_GANG_CARDINALITY"),
)


def pod_labels(job_labels: Mapping[str, str], job_id: str, run_id: str, queue: str) -> dict[str, str]:
    return {
        **job_labels,
        JOB_ID_LABEL: job_id,
        RUN_ID_LABEL: run_id,
        QUEUE_LABEL: queue,
        POD_NUMBER_LABEL: "0",
        POD_COUNT_LABEL: "1",
    }


def pod_annotations(job_annotations: Mapping[str, str], job_set: str, owner: str) -> dict[str, str]:
    return {**job_annotations, JOB_SET_ANNOTATION: job_set, OWNER_ANNOTATION: owner}


def injected_env(job_id: str, queue: str, job_set: str, annotations: Mapping[str, str]) -> dict[str, str]:
    """The variables Armada adds to each container that does not set them itself."""
    env = {"ARMADA_JOB_ID": job_id, "ARMADA_QUEUE": queue, "ARMADA_JOB_SET_ID": job_set}
    for annotation, variable in _GANG_VARIABLES:
        if annotations.get(annotation):
            env[variable] = annotations[annotation]
    return env
