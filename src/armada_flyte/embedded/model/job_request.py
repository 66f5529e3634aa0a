"""What a submitted request item says about its job, read the same way at submit and at restore:
its main pod, its gang and its external URI."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from armada_flyte.armada_names import GANG_CARDINALITY, GANG_ID, GANG_UNIFORMITY_LABEL

EXTERNAL_JOB_URI = "armadaproject.io/externalJobUri"


@dataclass(frozen=True)
class GangInfo:
    id: str
    cardinality: int
    uniformity_label: str = ""


def gang_info(annotations: Mapping[str, str]) -> GangInfo | None:
    """The gang a job belongs to (None when it is alone); ValueError when the annotations are wrong."""
    if GANG_ID not in annotations:
        return None
    gang_id = annotations[GANG_ID]
    if not gang_id:
        raise ValueError(f"annotation {GANG_ID} is empty; give the gang a name or drop the annotation")
    raw = annotations.get(GANG_CARDINALITY)
    if raw is None:
        raise ValueError(
            f"gang {gang_id} has no {GANG_CARDINALITY} annotation; set it to the number of jobs in the gang"
        )
    try:
        cardinality = int(raw)
    except ValueError:
        raise ValueError(f"{GANG_CARDINALITY} of gang {gang_id} is {raw!r}; it must be a whole number") from None
    if cardinality < 1:
        raise ValueError(f"{GANG_CARDINALITY} of gang {gang_id} is {cardinality}; it must be at least 1")
    if cardinality == 1:
        return None
    return GangInfo(gang_id, cardinality, annotations.get(GANG_UNIFORMITY_LABEL, ""))


def main_pod_spec(item: Any) -> Any:
    return item.pod_spec if item.HasField("pod_spec") else item.pod_specs[0]
