"""The task template's contract: what an author writes (`ArmadaConfig`) and what the template
carries in `custom` once defaults are applied (`SubmissionSpec`, with where each value came from).

Both sides read it: the task side writes `custom` at `flyte run` / `flyte deploy`, the connector
parses it back into one typed object, validated once at its boundary. Pure: no Flyte, no I/O.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field, fields
from typing import Any, Mapping, Optional, Sequence, Union

from armada_flyte.architecture import (
    ANY,
    Architecture,
    ArchitectureRequest,
    is_preference,
    parse_request,
    sorted_architectures,
)
from armada_flyte.armada_names import MAX_JOB_SET_ID
from armada_flyte.errors import InvalidConfig, shown
from armada_flyte.kube import MAX_QUANTITY, dns_label_problem, label_key_problem, parse_quantity

TASK_TYPE = "armada"
"""The task type that routes a task to the `armada` connector."""

PROJECT_FIELDS = ("architecture", "queue", "namespace", "priority", "job_set_id")
"""Fields a project (pyproject.toml or environment) may set defaults for."""
PROJECT_ENV_PREFIX = "ARMADA_FLYTE_"
"""`ARMADA_FLYTE_<FIELD>` variables carry project defaults at serialisation time."""

_CREDENTIAL_WORDS = ("token", "password", "secret", "credential", "apikey", "api_key")


class Source(str, enum.Enum):
    """Where a setting's value came from, strongest first."""

    TASK = "task"
    ENV = "env"
    PROJECT = "project"
    POD_TEMPLATE = "pod_template"
    PLATFORM = "platform"
    DEFAULT = "default"
    NONE = "none"
    """No architecture at all: the pod may land anywhere."""

    def __str__(self) -> str:
        return self.value


BAKED_SOURCES = tuple(s.value for s in (Source.TASK, Source.ENV, Source.PROJECT, Source.PLATFORM, Source.DEFAULT))
"""The sources a template's `custom.sources` may name (the rest are decided by the connector)."""


@dataclass(frozen=True)
class ArmadaConfig:
    """Armada submission settings for every task of a `TaskEnvironment`.

    Every field may be left unset (None): it then takes the project default
    (`[tool.armada-flyte]` in pyproject.toml or an `ARMADA_FLYTE_<FIELD>` variable), else the
    built-in default. This object is serialised into the task template, so it never holds
    credentials: those belong to the connector's settings.
    """

    queue: Optional[str] = None
    """Armada queue to submit to (built-in default: `flyte`)."""
    job_set_id: Optional[str] = None
    """Job set grouping the run's jobs (built-in default: `flyte-<run name>` at submission)."""
    namespace: Optional[str] = None
    """Kubernetes namespace of the pod (built-in default: `default`)."""
    priority: Optional[float] = None
    """Priority within the queue; lower runs first (built-in default: 1)."""
    cpu: Optional[str] = None
    """CPU for the pod, overriding `flyte.Resources` (e.g. `"2"`, `"500m"`)."""
    memory: Optional[str] = None
    """Memory for the pod, overriding `flyte.Resources` (e.g. `"4Gi"`)."""
    gang_id: Optional[str] = None
    """Jobs of one run sharing this id are scheduled all-or-nothing."""
    gang_cardinality: Optional[int] = None
    """How many jobs make up the gang (2 or more; 1 means no gang)."""
    gang_node_uniformity_label: Optional[str] = None
    """Node label all gang members must share (default `kubernetes.io/arch`)."""
    architecture: Union[Architecture, str, Sequence[str], None] = None
    """CPU architecture to run on: `amd64` or `arm64` (also `x86_64`, `aarch64`, `linux/arm64`); `any`:
    whichever architecture both the (multi-arch) image and the platform offer has room; or an ordered
    preference such as `["arm64", "amd64"]`: the first while it has room, the next after `spill_after`."""
    spill_after: Optional[float] = None
    """For a preference: seconds a job may wait queued for lack of room before it moves to the next
    architecture (default: the platform's `spill_after_seconds`, else 120)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "architecture", parse_request(self.architecture, "ArmadaConfig.architecture"))
        if self.spill_after is not None:
            after = self.spill_after
            if isinstance(after, bool) or not isinstance(after, (int, float)) or not _finite(after) or after <= 0:
                raise InvalidConfig("ArmadaConfig.spill_after", after, "use a number of seconds > 0")
            if self.architecture is not None and not is_preference(self.architecture):
                raise InvalidConfig(
                    "ArmadaConfig.spill_after",
                    after,
                    "only a preference spills over: set architecture to an ordered list such as ['arm64', 'amd64']",
                )
            object.__setattr__(self, "spill_after", float(after))
        _check_optional_text(self, "queue")
        _check_optional_text(self, "job_set_id")
        if self.job_set_id is not None and len(self.job_set_id) > MAX_JOB_SET_ID:
            raise InvalidConfig(
                "ArmadaConfig.job_set_id",
                self.job_set_id[:40] + "...",
                f"Armada allows at most {MAX_JOB_SET_ID} characters",
            )
        if self.namespace is not None and (problem := dns_label_problem(self.namespace)):
            raise InvalidConfig("ArmadaConfig.namespace", self.namespace, problem)
        if self.priority is not None:
            priority = self.priority
            if (
                isinstance(priority, bool)
                or not isinstance(priority, (int, float))
                or not _finite(priority)
                or priority < 0
            ):
                raise InvalidConfig("ArmadaConfig.priority", priority, "use a finite number >= 0")
        for name in ("cpu", "memory"):
            value = getattr(self, name)
            if value is None:
                continue
            try:
                quantity = parse_quantity(value)
            except ValueError as exc:
                raise InvalidConfig(f"ArmadaConfig.{name}", value, str(exc)) from None
            if quantity <= 0:
                raise InvalidConfig(f"ArmadaConfig.{name}", value, "use a positive quantity")
            if quantity >= MAX_QUANTITY:
                raise InvalidConfig(
                    f"ArmadaConfig.{name}",
                    value,
                    f"no node has that much; Kubernetes caps quantities at {MAX_QUANTITY}",
                )
            object.__setattr__(self, name, str(value))
        _check_gang(self)


def _finite(number: int | float) -> bool:
    try:
        return math.isfinite(number)
    except OverflowError:  # an int too large for a float
        return False


def _check_optional_text(config: ArmadaConfig, name: str) -> None:
    value = getattr(config, name)
    if value is None:
        return
    if not isinstance(value, str) or not value.strip():
        raise InvalidConfig(f"ArmadaConfig.{name}", value, "use a non-empty string, or leave it unset for the default")
    lowered = value.lower()
    if any(word in lowered for word in _CREDENTIAL_WORDS) and ("=" in value or ":" in value):
        raise InvalidConfig(
            f"ArmadaConfig.{name}",
            "<redacted>",
            "this looks like a credential; credentials belong in the connector settings "
            "(ARMADA_FLYTE_AUTH_TOKEN, a Kubernetes Secret), never in the task config",
        )


def _check_gang(config: ArmadaConfig) -> None:
    if config.gang_cardinality is not None:
        if (
            isinstance(config.gang_cardinality, bool)
            or not isinstance(config.gang_cardinality, int)
            or config.gang_cardinality < 1
        ):
            raise InvalidConfig(
                "ArmadaConfig.gang_cardinality",
                config.gang_cardinality,
                "use a whole number >= 1 (2 or more makes a gang)",
            )
        if config.gang_id is None:
            raise InvalidConfig("ArmadaConfig.gang_id", None, "set gang_id when gang_cardinality is set")
    if config.gang_id is not None:
        _check_optional_text(config, "gang_id")
        if config.gang_cardinality is None:
            raise InvalidConfig(
                "ArmadaConfig.gang_cardinality", None, "set how many jobs make up gang " + shown(config.gang_id, 80)
            )
    label = config.gang_node_uniformity_label
    if label is not None:
        if config.gang_id is None:
            raise InvalidConfig(
                "ArmadaConfig.gang_node_uniformity_label",
                label,
                "only gangs use it; set gang_id and gang_cardinality too",
            )
        if problem := label_key_problem(label):
            raise InvalidConfig("ArmadaConfig.gang_node_uniformity_label", label, problem)


CONFIG_FIELDS = tuple(f.name for f in fields(ArmadaConfig))

DEFAULT_QUEUE = "flyte"
DEFAULT_NAMESPACE = "default"
DEFAULT_PRIORITY = 1.0
_BUILT_IN_DEFAULTS = {"queue": DEFAULT_QUEUE, "namespace": DEFAULT_NAMESPACE, "priority": DEFAULT_PRIORITY}
"""What an ArmadaConfig field left unset (None, or an empty name) becomes; the other fields stay unset."""


_CUSTOM_EXTRA_KEYS = ("sources", "secrets", "image_architectures")


@dataclass(frozen=True)
class SubmissionSpec:
    """Effective Armada settings of one task, plus the source of each (`task`, `env`, `project`, ...)."""

    queue: str = DEFAULT_QUEUE
    namespace: str = DEFAULT_NAMESPACE
    priority: float = DEFAULT_PRIORITY
    job_set_id: Optional[str] = None
    cpu: Optional[str] = None
    memory: Optional[str] = None
    gang_id: Optional[str] = None
    gang_cardinality: Optional[int] = None
    gang_node_uniformity_label: Optional[str] = None
    architecture: Optional[ArchitectureRequest] = None
    sources: Mapping[str, str] = field(default_factory=dict)
    image_architectures: tuple[Architecture, ...] = ()
    """For `any` or a preference: the architectures the task's `flyte.Image` declares (its `platform`),
    read at serialisation; empty when Flyte doesn't know (a prebuilt reference)."""

    spill_after: Optional[float] = None

    @property
    def wants_any(self) -> bool:
        return self.architecture == ANY

    @property
    def prefers(self) -> bool:
        """The task asks for an ordered preference of architectures."""
        return is_preference(self.architecture)

    def source_of(self, name: str) -> str:
        return self.sources.get(name, Source.DEFAULT.value)

    def to_custom(self) -> dict[str, Any]:
        """Plain JSON-able dict for `TaskTemplate.custom` (unset values are left out)."""
        out: dict[str, Any] = {}
        for name in CONFIG_FIELDS:
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, tuple):
                value = [a.value for a in value]
            out[name] = value.value if isinstance(value, Architecture) else value
        out["sources"] = dict(self.sources)
        if self.image_architectures:
            out["image_architectures"] = [a.value for a in self.image_architectures]
        return out

    @classmethod
    def from_custom(cls, custom: Mapping[str, Any] | None) -> SubmissionSpec:
        """Parse and validate `TaskTemplate.custom`; field errors are named `custom.<field>`."""
        custom = dict(custom or {})
        unknown = sorted(set(custom) - set(CONFIG_FIELDS) - set(_CUSTOM_EXTRA_KEYS))
        if unknown:
            raise InvalidConfig(
                "custom", unknown, f"unknown keys in the task template; known: {', '.join(CONFIG_FIELDS)}"
            )
        values = {name: custom.get(name) for name in CONFIG_FIELDS}
        # Struct stores numbers as floats: bring whole-number fields back.
        if isinstance(values["gang_cardinality"], float) and values["gang_cardinality"].is_integer():
            values["gang_cardinality"] = int(values["gang_cardinality"])
        try:
            config = ArmadaConfig(**values)
        except InvalidConfig as exc:
            raise InvalidConfig(exc.field.replace("ArmadaConfig.", "custom."), exc.value, exc.fix) from None
        sources = custom.get("sources") or {}
        if not isinstance(sources, Mapping) or any(v not in BAKED_SOURCES for v in sources.values()):
            raise InvalidConfig("custom.sources", sources, f"each source must be one of {', '.join(BAKED_SOURCES)}")
        declared = custom.get("image_architectures") or []
        if not isinstance(declared, Sequence) or isinstance(declared, str):
            raise InvalidConfig("custom.image_architectures", declared, "use a list such as ['amd64', 'arm64']")
        image = tuple(Architecture.parse(a, "custom.image_architectures") for a in declared)
        return cls.from_config(config, dict(sources), image)

    @classmethod
    def from_config(
        cls, config: ArmadaConfig, sources: Mapping[str, str], image_architectures: Sequence[Architecture] = ()
    ) -> SubmissionSpec:
        """Fill the built-in defaults into the fields `config` leaves unset (every ArmadaConfig field is
        a SubmissionSpec field of the same name: tests/toplevel/test_armada_config.py holds them alike)."""
        values: dict[str, Any] = {name: getattr(config, name) for name in CONFIG_FIELDS}
        for name, default in _BUILT_IN_DEFAULTS.items():
            if values[name] is None or values[name] == "":
                values[name] = default
        values["priority"] = float(values["priority"])
        return cls(**values, sources=dict(sources), image_architectures=sorted_architectures(image_architectures))
