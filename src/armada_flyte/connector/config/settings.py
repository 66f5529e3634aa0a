"""The connector's own settings (never serialised into a task template).

Sources, strongest first: `armada_flyte.configure(...)` in code > environment variables >
a YAML file named by `ARMADA_FLYTE_CONFIG_FILE` > defaults. The reference design's names
(`ARMADA_URL`, `FLYTE_BLOB_ENDPOINT`, `FLYTE_BLOB_ACCESS_KEY`, `FLYTE_BLOB_SECRET_KEY`) keep
working; everything else is `ARMADA_FLYTE_<SETTING>`. Every source names settings flat
(`armada_url`, `status_streams_max`); the values are checked and held in the groups of
`settings_groups.py`, composed into one `ConnectorConfig`. A connector holds the object it
resolved and passes the groups down; `configure` only changes what the next resolution reads.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Optional

from pydantic import Field, ValidationError, create_model
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from armada_flyte.config_file import read_yaml
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.config.settings_groups import (
    ENV_PREFIX,
    ArmadaConnection,
    BlobStore,
    ImageChecks,
    JobTargets,
    Limits,
    Tenancy,
    Timeouts,
    env_names,
)
from armada_flyte.errors import InvalidConfig, invalid_config_from
from armada_flyte.spec import PROJECT_ENV_PREFIX, PROJECT_FIELDS

CONFIG_FILE_ENV = "ARMADA_FLYTE_CONFIG_FILE"

GROUPS = {
    "connection": ArmadaConnection,
    "blob": BlobStore,
    "targets": JobTargets,
    "tenancy": Tenancy,
    "timeouts": Timeouts,
    "limits": Limits,
    "images": ImageChecks,
}
"""Each group of `ConnectorConfig`, by attribute name, in the order their checks run."""
GROUP_OF = {name: group for group, model in GROUPS.items() for name in model.model_fields}
"""The group holding each setting."""
FIELDS = tuple(GROUP_OF)
SECRET_FIELDS = frozenset(
    name for name, group in GROUP_OF.items() if "SecretStr" in str(GROUPS[group].model_fields[name].annotation)
)
ENV_NAMES = {name: env_names(GROUPS[group], name) for name, group in GROUP_OF.items()}
"""The environment variables each setting is read from (`ARMADA_FLYTE_<NAME>`, and a legacy name for some)."""


@dataclass(frozen=True)
class ConnectorConfig:
    """Where Armada and the blob store are, how to reach them, and how the connector behaves: one group each.

    A setting also reads by its flat name (`settings.armada_url`), the name users set it by."""

    connection: ArmadaConnection = field(default_factory=ArmadaConnection)
    blob: BlobStore = field(default_factory=BlobStore)
    targets: JobTargets = field(default_factory=JobTargets)
    tenancy: Tenancy = field(default_factory=Tenancy)
    timeouts: Timeouts = field(default_factory=Timeouts)
    limits: Limits = field(default_factory=Limits)
    images: ImageChecks = field(default_factory=ImageChecks)

    def __getattr__(self, name: str) -> Any:
        group = GROUP_OF.get(name)
        if group is None:
            raise AttributeError(f"{type(self).__name__} has no setting {name!r}")
        return getattr(getattr(self, group), name)

    @property
    def placement(self) -> JobTargets:
        """The old name of `targets` (kept for code written against it)."""
        return self.targets

    def node_groups(self) -> NodeGroups:
        """The node groups this connector places pods with."""
        return self.targets.node_groups()


class _SafeYamlSource(YamlConfigSettingsSource):
    """pydantic-settings' YAML source, reading the one file with the project's bounded loader (which
    also says when it is missing or a directory, where pydantic-settings would skip it)."""

    def _read_files(self, files: Any, deep_merge: bool = False) -> dict[str, Any]:
        return read_yaml(str(files), CONFIG_FILE_ENV, "point it at the connector's YAML settings file")

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        return self._read_files(file_path)


class _Sources(BaseSettings):
    """Reads the flat names from code, the environment and the YAML file; the groups check the values."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid", frozen=True, populate_by_name=True)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config_file = os.environ.get(CONFIG_FILE_ENV)
        if config_file:
            sources.append(_SafeYamlSource(settings_cls, yaml_file=config_file))
        return tuple(sources)


_Given: type[_Sources] = create_model(  # type: ignore[call-overload]
    "_Given",
    __base__=_Sources,
    **{
        name: (
            Annotated[Any, NoDecode],
            Field(None, validation_alias=GROUPS[group].model_fields[name].validation_alias),
        )
        for name, group in GROUP_OF.items()
    },
)
"""Every setting as given (raw text from the environment); which were given at all is `model_fields_set`."""


def given_settings(**overrides: Any) -> dict[str, Any]:
    """The settings some source sets, by flat name, unchecked (`overrides` strongest, then env, then file)."""
    given = _Given(**overrides)
    return {name: getattr(given, name) for name in given.model_fields_set}


@dataclass
class _Configured:
    """What `configure` set in code, and a count of changes (a connector following it rebuilds on a change)."""

    overrides: dict[str, Any] = field(default_factory=dict)
    generation: int = 0


_configured = _Configured()


def generation() -> int:
    """Bumped by every `configure`/`reset`, so connectors that follow them know to rebuild."""
    return _configured.generation


def configure(**settings: Any) -> None:
    """Set settings in code; unknown names and bad values fail now and are not kept."""
    unknown = sorted(set(settings) - set(FIELDS))
    if unknown:
        raise InvalidConfig("configure()", unknown, f"unknown settings; known: {', '.join(FIELDS)}")
    resolve_settings(**settings)
    _configured.overrides.update(settings)
    _configured.generation += 1


def reset() -> None:
    """Forget what `configure` set (tests, and the local stack on exit)."""
    _configured.overrides.clear()
    _configured.generation += 1


# Other ARMADA_FLYTE_* names this project reads, so a typo among the connector's can be told apart.
OTHER_ENV_NAMES = frozenset(
    {
        CONFIG_FILE_ENV,
        "ARMADA_FLYTE_REGISTRY_PASSWORD",  # `armada-flyte image inspect --username`
        "ARMADA_FLYTE_RUNTIME_IMAGE",  # examples/multiarch.py
        "ARMADA_FLYTE_RAW_DATA_PATH",  # examples/multiarch.py
        # the image scripts (scripts/*.sh) and `armada-flyte image build`; `eval "$(scripts/image-builder.sh start)"`
        # exports some of them into the shell that then runs the connector
        "ARMADA_FLYTE_CACHE",
        "ARMADA_FLYTE_EXECUTOR_STUBS",  # `armada-flyte executor` (scripts/build-executor-stubs.sh)
        "ARMADA_FLYTE_REGISTRY",
        "ARMADA_FLYTE_REGISTRY_PORT",
        "ARMADA_FLYTE_BUILDER",
        "ARMADA_FLYTE_CLI",
        "ARMADA_FLYTE_CMD",  # scripts/armada-testsuite.sh and scripts/real-armada.sh: the armada-flyte command
        "ARMADA_FLYTE_IMAGE_PARTS",
        "ARMADA_FLYTE_IMAGE_PARTS_STARTED",
        "ARMADA_FLYTE_REAL_ARMADA",  # scripts/test.sh: the real-Armada tier without CI=true
        "ARMADA_FLYTE_DEV_RUN_ID",  # set in every process pod (pod_runner/process_tree.py)
        "ARMADA_FLYTE_DEV_AUTH",  # `armada-flyte dev`: its credentials (admin/auth_sources.py)
    }
)
_TEST_PREFIX = "ARMADA_FLYTE_TEST_"  # the project's own tests

# What Kubernetes injects for every Service in the pod's namespace (unless enableServiceLinks is
# false): a Service named armada-flyte-connector yields ARMADA_FLYTE_CONNECTOR_SERVICE_HOST etc.
# Matched by name and value, so a typo'd setting is still caught.
_SERVICE_LINK = re.compile(
    r"^[A-Z0-9_]+_(?:"
    r"SERVICE_HOST=[0-9A-Fa-f.:]+"
    r"|SERVICE_PORT(?:_[A-Z0-9_]+)?=\d+"
    r"|PORT(?:_\d+_(?:TCP|UDP|SCTP))?=(?:tcp|udp|sctp)://[0-9A-Fa-f.:\[\]]+"
    r"|PORT_\d+_(?:TCP|UDP|SCTP)_(?:PROTO=(?:tcp|udp|sctp)|PORT=\d+|ADDR=[0-9A-Fa-f.:]+)"
    r")$"
)


def is_service_link(name: str, value: str) -> bool:
    """Whether `name=value` is one of the variables Kubernetes injects for a Service."""
    return _SERVICE_LINK.match(f"{name}={value}") is not None


def _known_env_names() -> set[str]:
    names = {name for aliases in ENV_NAMES.values() for name in aliases if name.startswith(ENV_PREFIX)}
    names |= {PROJECT_ENV_PREFIX + name.upper() for name in PROJECT_FIELDS}
    return names | OTHER_ENV_NAMES


def check_env_names(environ: Optional[dict[str, str]] = None) -> None:
    """Refuse an `ARMADA_FLYTE_*` variable nobody reads: a typo would otherwise be ignored silently."""
    import difflib

    environ = dict(os.environ) if environ is None else environ
    known = _known_env_names()
    for name in sorted(environ):
        if not name.startswith("ARMADA_FLYTE_") or name in known or name.startswith(_TEST_PREFIX):
            continue
        if is_service_link(name, environ[name]):
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise InvalidConfig(name, "<not shown>", f"unknown setting; {hint}known: {', '.join(sorted(known))}")


def resolve_settings(**extra: Any) -> ConnectorConfig:
    """Build the settings from all sources now."""
    check_env_names()
    try:
        given = given_settings(**{**_configured.overrides, **extra})
    except ValidationError as exc:
        raise invalid_config_from(exc, hidden=SECRET_FIELDS) from None
    return settings_from(**given)


def settings_from(**flat: Any) -> ConnectorConfig:
    """Settings from these flat names alone, defaults for the rest (no environment, no file): for a server
    of the caller's own, whose address and credentials it knows."""
    try:
        groups = {
            group: model(**{name: value for name, value in flat.items() if GROUP_OF[name] == group})
            for group, model in GROUPS.items()
        }
    except ValidationError as exc:
        raise invalid_config_from(exc, hidden=SECRET_FIELDS) from None
    return ConnectorConfig(**groups)
