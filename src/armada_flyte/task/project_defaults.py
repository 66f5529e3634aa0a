"""Project-wide defaults, resolved when a task is serialised (`flyte run`, `flyte deploy`).

Precedence, strongest first: the task's `ArmadaConfig` > `ARMADA_FLYTE_<FIELD>` environment
variables > `[tool.armada-flyte]` in the project's pyproject.toml > built-in defaults. The
result is baked into the task template with its provenance, so a registered version keeps its
architecture even when the defaults change later. The admin's `default_architecture` is applied
by the connector, and only to templates that carry none.
"""

from __future__ import annotations

import os
import pathlib
from typing import Any, Mapping, Optional

from armada_flyte.architecture import ANY, Architecture, is_preference
from armada_flyte.errors import InvalidConfig
from armada_flyte.spec import CONFIG_FIELDS, PROJECT_ENV_PREFIX, PROJECT_FIELDS, ArmadaConfig, Source, SubmissionSpec
from armada_flyte.task.image_declaration import check_image_declares, declared_architectures

ENV_PREFIX = PROJECT_ENV_PREFIX
TOOL_TABLE = "armada-flyte"
_TASK_ONLY_FIELDS = tuple(name for name in CONFIG_FIELDS if name not in PROJECT_FIELDS)


def resolve_submission(
    config: ArmadaConfig,
    *,
    sctx: Any = None,
    task_name: str = "task",
    image: Any = None,
    environ: Optional[Mapping[str, str]] = None,
    start_dir: Optional[pathlib.Path] = None,
) -> SubmissionSpec:
    """Merge task, environment and project values into one `SubmissionSpec` with sources."""
    environ = os.environ if environ is None else environ
    root_dir = getattr(sctx, "root_dir", None) if sctx is not None else None
    project = project_defaults(_find_pyproject(root_dir, start_dir))
    env = env_defaults(environ)
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name in PROJECT_FIELDS:
        for source, layer in (
            (Source.TASK, {name: getattr(config, name)}),
            (Source.ENV, env),
            (Source.PROJECT, project),
        ):
            value = layer.get(name)
            if value is not None:
                merged[name] = value
                sources[name] = source.value
                break
    task_only = {name: getattr(config, name) for name in _TASK_ONLY_FIELDS}
    for name, value in task_only.items():
        if value is not None:
            sources[name] = Source.TASK.value
    config = ArmadaConfig(**merged, **task_only)
    if config.architecture == ANY or is_preference(config.architecture):
        # Baked in, so the connector intersects what the image is built for with what the platform offers.
        return SubmissionSpec.from_config(config, sources, declared_architectures(task_name, image))
    spec = SubmissionSpec.from_config(config, sources)
    if isinstance(spec.architecture, Architecture):
        check_image_declares(task_name, image, spec.architecture.value)
    return spec


def env_defaults(environ: Mapping[str, str]) -> dict[str, Any]:
    """Project defaults from `ARMADA_FLYTE_<FIELD>` variables, each validated on its own."""
    values: dict[str, Any] = {}
    for name in PROJECT_FIELDS:
        raw = environ.get(ENV_PREFIX + name.upper())
        if raw is None or raw == "":
            continue
        values[name] = _validated(name, raw, f"{ENV_PREFIX}{name.upper()}")
    return values


def project_defaults(pyproject: Optional[pathlib.Path]) -> dict[str, Any]:
    """Project defaults from the `[tool.armada-flyte]` table, each validated on its own."""
    if pyproject is None:
        return {}
    table = _read_toml(pyproject).get("tool", {}).get(TOOL_TABLE, {})
    if not isinstance(table, dict):
        raise InvalidConfig(f"{pyproject} [tool.{TOOL_TABLE}]", table, "make it a table of settings")
    unknown = sorted(set(table) - set(PROJECT_FIELDS))
    if unknown:
        raise InvalidConfig(
            f"{pyproject} [tool.{TOOL_TABLE}]",
            unknown,
            f"unknown keys; a project may set {', '.join(PROJECT_FIELDS)}",
        )
    return {name: _validated(name, value, f"{pyproject} [tool.{TOOL_TABLE}] {name}") for name, value in table.items()}


def _validated(name: str, value: Any, where: str) -> Any:
    if name == "priority" and isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise InvalidConfig(where, value, "use a number >= 0") from None
    try:
        checked = ArmadaConfig(**{name: value})
    except InvalidConfig as exc:
        raise InvalidConfig(where, exc.value, exc.fix) from None
    return getattr(checked, name)


def _find_pyproject(root_dir: Any, start_dir: Optional[pathlib.Path]) -> Optional[pathlib.Path]:
    """The pyproject.toml at Flyte's root_dir, else the nearest one upward from the working directory."""
    if root_dir:
        candidate = pathlib.Path(root_dir) / "pyproject.toml"
        if candidate.is_file():
            return candidate
    here = (start_dir or pathlib.Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _read_toml(path: pathlib.Path) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import toml

        return toml.loads(path.read_text())
    with path.open("rb") as handle:
        return tomllib.load(handle)
