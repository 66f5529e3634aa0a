"""What Flyte persists for one Armada job (the connector's `ResourceMeta`), and how it is read back.

Both sides meet here: create writes it (`submit.plan.JobPlan.metadata`), every poll reads it (the pure
decision in `poll.decision`, the I/O in `service.py`); its JSON is a contract across connector versions.
"""

from __future__ import annotations

import base64
import json
import logging
from dataclasses import dataclass, fields, replace
from typing import Any, Iterable

from flyte.connectors import ResourceMeta

from armada_flyte.errors import InvalidConfig

log = logging.getLogger(__name__)


@dataclass
class ArmadaJobMetadata(ResourceMeta):
    """What Flyte persists for one Armada job and hands back on every get/delete.

    Every field has a default and `decode` is lenient, so replicas of different versions read
    each other's metadata during a rolling upgrade or rollback (new fields: defaults; fields a
    newer connector added: ignored). Add fields with defaults; never rename or retype one.
    """

    job_id: str = ""
    job_set_id: str = ""
    queue: str = ""
    namespace: str = "default"
    outputs_path: str = ""
    architecture: str = ""
    architecture_source: str = ""
    node_group: str = ""
    image: str = ""
    """The task's container image, named when a crash shows it lacks the architecture it ran on."""
    any_of: str = ""
    """For `architecture="any"`: the architectures the job may run on, comma-separated."""
    submitted_at: float = 0.0
    task: str = ""
    timeout_seconds: float = 0.0
    """The task's `timeout` (Flyte's max_runtime, per attempt; 0: none), counted from the run's start."""
    queued_timeout_seconds: float = 0.0
    """How long the job may wait to start, counted from submission: `flyte.Timeout(max_queued_time=)`,
    else the task's `timeout`, so no job waits in the queue forever when a timeout is set."""
    gang_id: str = ""
    gang_cardinality: int = 0
    spill_after_seconds: float = 0.0
    """For an architecture preference: how long each step's job may wait queued for room before the next."""
    spill_jobs: str = ""
    """For an architecture preference: the jobs of the later architectures, in order, as JSON (each one's
    architecture, node group and serialised request item). GetTask can't return new metadata, so every
    step is decided at create; `poll.decision` says how any replica finds the current one."""
    fallback: str = ""
    """Set when the task was narrowed to the admin's fallback architecture (`architecture`): why (its image's
    platforms could not be read at submit)."""
    refusal_code: str = ""
    """Set when create refused the task for good (no job was submitted): the error's type name."""
    refusal: str = ""

    def steps(self) -> tuple[Step, ...]:
        """Every step of the task, first (the job create submitted) to last; one when it has no preference."""
        first = Step(0, self.architecture, self.node_group)
        if not self.spill_jobs:
            return (first,)
        later = json.loads(self.spill_jobs)
        return (first,) + tuple(
            Step(n + 1, s["architecture"], s["node_group"], base64.b64decode(s["item"])) for n, s in enumerate(later)
        )

    def for_step(
        self, step: Step, job_id: str, submitted_at: float = 0.0, gang_cardinality: int = 0
    ) -> ArmadaJobMetadata:
        """The metadata of a step's job, as if create had submitted it: its id, architecture and node group,
        submitted at `submitted_at` (0: no earlier than `spill_after` after each step before, as spills move),
        in its own gang (a gang's later steps are each a gang of their own: `submit.pod.job_request`) of
        `gang_cardinality` members (0: the task's; fewer when members succeeded on a step it moved on from)."""
        if step.index == 0:
            return self
        return replace(
            self,
            job_id=job_id,
            architecture=step.architecture,
            node_group=step.node_group,
            submitted_at=submitted_at or self.submitted_at + step.index * self.spill_after_seconds,
            spill_jobs="",
            gang_id=self.gang_id and f"{self.gang_id}-{step.architecture}",
            gang_cardinality=gang_cardinality or self.gang_cardinality,
        )

    def encode(self) -> bytes:
        """The JSON Flyte persists: what the SDK's `json.dumps(asdict(self))` writes, without asdict's
        deep copy (every field is a str, int or float), which costs more than the rest of it."""
        return json.dumps({name: getattr(self, name) for name in _FIELD_NAMES}).encode("utf-8")

    @classmethod
    def decode(cls, data: bytes) -> ArmadaJobMetadata:
        """Read metadata written by any connector version: unknown keys are ignored, missing
        ones take their defaults, and a value of the wrong type falls back to the default."""
        try:
            raw = json.loads(data.decode("utf-8")) if data else {}
        except (UnicodeDecodeError, ValueError) as exc:
            raise InvalidConfig(
                "resource_meta", data[:80], f"it is not the JSON the armada connector writes ({exc})"
            ) from None
        if not isinstance(raw, dict):
            raise InvalidConfig("resource_meta", raw, "the armada connector writes a JSON object")
        values = {}
        for name, default in _FIELD_DEFAULTS:
            if name in raw:
                value = raw[name]
                # Every poll decodes: a value of its field's own type (all of them, but across versions) is kept as is.
                values[name] = value if type(value) is type(default) else _coerced(value, default)
        if len(values) != len(raw):
            ignored = sorted(set(raw) - set(_FIELD_NAMES))
            log.debug("job %s: ignoring metadata fields of another connector version: %s", raw.get("job_id"), ignored)
        return cls(**values)


@dataclass(frozen=True)
class Step:
    """One step of a task's architecture preference, as its metadata describes it."""

    index: int
    architecture: str
    node_group: str
    item: bytes = b""
    """The serialised request item to submit (empty for step 0, submitted at create)."""


def encoded_steps(later: Iterable[tuple[str, str, bytes]]) -> str:
    """`spill_jobs` for the steps after the first: (architecture, node group, serialised request item) each."""
    return json.dumps(
        [
            {"architecture": architecture, "node_group": node_group, "item": base64.b64encode(item).decode()}
            for architecture, node_group, item in later
        ]
    )


_FIELD_DEFAULTS = tuple((f.name, f.default) for f in fields(ArmadaJobMetadata))
_FIELD_NAMES = tuple(name for name, _ in _FIELD_DEFAULTS)


def _coerced(value: Any, default: Any) -> Any:
    """`value` as the type of `default` (metadata holds only str, int and float fields)."""
    if isinstance(default, bool) or not isinstance(default, (str, int, float)):
        return value
    if isinstance(value, type(default)) and not isinstance(value, bool):
        return value
    try:
        return type(default)(value)
    except (TypeError, ValueError):
        return default
