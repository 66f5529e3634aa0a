"""What a task author touches: `ArmadaConfig` and the task class it selects.

Kept free of grpc and armada_client so task images that import it stay lean.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Dict, Optional, Union

from flyte.extend import AsyncFunctionTaskTemplate, TaskPluginRegistry
from flyte.models import SerializationContext

from armada_flyte.architecture import Architecture, parse_optional
from armada_flyte.errors import InvalidConfig
from armada_flyte.k8s_names import dns_label_problem, label_key_problem, parse_quantity

TASK_TYPE = "armada"

# Armada's own limits (see ARMADA_FACTS): job set ids under 1024 characters.
_MAX_JOB_SET_ID = 1023
_CREDENTIAL_WORDS = ("token", "password", "secret", "credential", "apikey", "api_key")


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
    architecture: Union[Architecture, str, None] = None
    """CPU architecture to run on: `amd64` or `arm64` (also `x86_64`, `aarch64`, `linux/arm64`)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "architecture", parse_optional(self.architecture, "ArmadaConfig.architecture"))
        _check_optional_text(self, "queue")
        _check_optional_text(self, "job_set_id")
        if self.job_set_id is not None and len(self.job_set_id) > _MAX_JOB_SET_ID:
            raise InvalidConfig("ArmadaConfig.job_set_id", self.job_set_id[:40] + "...", "Armada allows at most 1023 characters")
        if self.namespace is not None and (problem := dns_label_problem(self.namespace)):
            raise InvalidConfig("ArmadaConfig.namespace", self.namespace, problem)
        if self.priority is not None:
            if isinstance(self.priority, bool) or not isinstance(self.priority, (int, float)) or self.priority < 0:
                raise InvalidConfig("ArmadaConfig.priority", self.priority, "use a number >= 0")
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
            object.__setattr__(self, name, str(value))
        _check_gang(self)


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
        if isinstance(config.gang_cardinality, bool) or not isinstance(config.gang_cardinality, int) or config.gang_cardinality < 1:
            raise InvalidConfig("ArmadaConfig.gang_cardinality", config.gang_cardinality, "use a whole number >= 1 (2 or more makes a gang)")
        if config.gang_id is None:
            raise InvalidConfig("ArmadaConfig.gang_id", None, "set gang_id when gang_cardinality is set")
    if config.gang_id is not None:
        _check_optional_text(config, "gang_id")
        if config.gang_cardinality is None:
            raise InvalidConfig("ArmadaConfig.gang_cardinality", None, "set how many jobs make up gang " + repr(config.gang_id))
    label = config.gang_node_uniformity_label
    if label is not None:
        if config.gang_id is None:
            raise InvalidConfig("ArmadaConfig.gang_node_uniformity_label", label, "only gangs use it; set gang_id and gang_cardinality too")
        if problem := label_key_problem(label):
            raise InvalidConfig("ArmadaConfig.gang_node_uniformity_label", label, problem)


CONFIG_FIELDS = tuple(f.name for f in fields(ArmadaConfig))


@dataclass(kw_only=True)
class ArmadaFunctionTask(AsyncFunctionTaskTemplate):
    """A Flyte function task that runs as an Armada job through the `armada` connector.

    It does not inherit the SDK's `AsyncConnectorExecutorMixin`: `execute` below replaces all
    of it, and importing it would pull grpc into every task image.
    """

    plugin_config: ArmadaConfig = field(default_factory=ArmadaConfig)
    task_type: str = TASK_TYPE

    def custom_config(self, sctx: SerializationContext) -> Dict[str, Any]:
        """Bake the effective settings, and where each came from, into the task template."""
        from armada_flyte.defaults import resolve_submission

        spec = resolve_submission(self.plugin_config, sctx=sctx, task_name=self.name, image=self.image)
        return spec.to_custom()

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        """Run the function in the pod; in local runs, go through Armada (see `local_run`)."""
        from armada_flyte.local_run import execute_task

        return await execute_task(self, *args, **kwargs)


TaskPluginRegistry.register(ArmadaConfig, ArmadaFunctionTask)
