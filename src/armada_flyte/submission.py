"""The resolved submission settings a task template carries in `custom`.

`ArmadaConfig` is what the author writes (fields may be unset); `SubmissionSpec` is what the
template holds after defaults are applied, with where each value came from. The connector
parses `custom` back into this one typed object, validated once at its boundary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from armada_flyte.architecture import Architecture
from armada_flyte.errors import InvalidConfig
from armada_flyte.task import CONFIG_FIELDS, ArmadaConfig

DEFAULT_QUEUE = "flyte"
DEFAULT_NAMESPACE = "default"
DEFAULT_PRIORITY = 1.0

SOURCES = ("task", "env", "project", "platform", "default")
"""Where a value can come from, strongest first."""

_CUSTOM_EXTRA_KEYS = ("sources", "secrets")


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
    architecture: Optional[Architecture] = None
    sources: Mapping[str, str] = field(default_factory=dict)

    def source_of(self, name: str) -> str:
        return self.sources.get(name, "default")

    def to_custom(self) -> dict[str, Any]:
        """Plain JSON-able dict for `TaskTemplate.custom` (unset values are left out)."""
        out: dict[str, Any] = {}
        for name in CONFIG_FIELDS:
            value = getattr(self, name)
            if value is None:
                continue
            out[name] = value.value if isinstance(value, Architecture) else value
        out["sources"] = dict(self.sources)
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
        if not isinstance(sources, Mapping) or any(v not in SOURCES for v in sources.values()):
            raise InvalidConfig("custom.sources", sources, f"each source must be one of {', '.join(SOURCES)}")
        return cls.from_config(config, dict(sources))

    @classmethod
    def from_config(cls, config: ArmadaConfig, sources: Mapping[str, str]) -> SubmissionSpec:
        """Fill the built-in defaults into the fields `config` leaves unset."""
        return cls(
            queue=config.queue or DEFAULT_QUEUE,
            namespace=config.namespace or DEFAULT_NAMESPACE,
            priority=float(config.priority if config.priority is not None else DEFAULT_PRIORITY),
            job_set_id=config.job_set_id,
            cpu=config.cpu,
            memory=config.memory,
            gang_id=config.gang_id,
            gang_cardinality=config.gang_cardinality,
            gang_node_uniformity_label=config.gang_node_uniformity_label,
            architecture=config.architecture,  # type: ignore[arg-type]
            sources=dict(sources),
        )
