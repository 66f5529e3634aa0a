"""Read what the doctor checks: the node-group file (or preset, or the connector's own setting) and
Armada's YAML configs.

A file that can't be read or parsed is itself a finding, so one bad file doesn't hide the
problems the doctor can still find in the others.
"""

from __future__ import annotations

import pathlib
from typing import Any, Optional

import yaml

from armada_flyte.admin.doctor.config_checks import describe
from armada_flyte.admin.doctor.findings import Finding, passed, problem
from armada_flyte.config_file import MAX_FILE_BYTES, load_bounded
from armada_flyte.connector.config.node_groups import PRESETS_DIR, NodeGroups
from armada_flyte.errors import InvalidConfig

_PRESETS = ", ".join(sorted(p.stem for p in PRESETS_DIR.glob("*.yaml")))


def load_node_groups(file: Optional[pathlib.Path], preset: Optional[str]) -> tuple[Optional[NodeGroups], Finding]:
    """The node groups to check, from a file, a preset, or else what the connector's settings name."""
    if file is not None:
        origin, load = str(file), lambda: NodeGroups.from_yaml(file)
    elif preset is not None:
        origin, load = f"preset {preset}", lambda: NodeGroups.preset(preset)
    else:
        try:
            origin, load = _from_connector_settings()
        except InvalidConfig as exc:
            return None, problem(
                "node-groups.file",
                f"the connector settings are invalid: {exc}",
                "fix the ARMADA_FLYTE_* variables (or ARMADA_FLYTE_CONFIG_FILE), or pass "
                "--node-groups FILE / --preset NAME",
            )
    try:
        groups = load()
    except OSError as exc:
        return None, problem("node-groups.file", f"can't read {origin}: {exc}", "pass a readable node-group YAML file")
    except InvalidConfig as exc:
        if exc.field == "preset":
            return None, problem(
                "node-groups.file",
                f"no such preset: {exc}",
                "pick a known preset, or pass your own file with --node-groups FILE",
            )
        return None, problem(
            "node-groups.file",
            f"{origin} is not a valid node-group file: {exc}",
            f"correct it; each architecture (amd64, arm64) lists node_selector, tolerations, taints and "
            f"required_node_affinity in Kubernetes' shapes, as the presets in arch/ do ({_PRESETS})",
        )
    return groups, passed("node-groups.file", describe(groups, origin))


def load_yaml_mapping(path: pathlib.Path, check: str, what: str) -> tuple[Optional[dict[str, Any]], Optional[Finding]]:
    """A YAML file's top-level mapping, or a finding saying why it can't be used (read with the
    project's bounded loader: an alias bomb or a deep nest is a finding, not a hang or a crash)."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None, problem(
                check, f"the {what} {path} is over {MAX_FILE_BYTES // 2**20} MiB", "pass the right file"
            )
        data = load_bounded(path.read_text(), path.name)
    except OSError as exc:
        return None, problem(
            check, f"can't read the {what} {path}: {exc.strerror or exc}", f"pass the path of the {what} file"
        )
    except UnicodeDecodeError:
        return None, problem(check, f"the {what} {path} is not UTF-8 text", "save it as UTF-8")
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as exc:
        return None, problem(check, f"the {what} {path} is not valid YAML: {str(exc)[:400]}", "correct the YAML syntax")
    if not isinstance(data, dict):
        holds = "nothing" if data is None else type(data).__name__
        return None, problem(
            check,
            f"the {what} {path} holds {holds}, not a mapping of settings",
            f"pass the {what} file itself (or its Helm values with applicationConfig)",
        )
    return data, None


def _from_connector_settings() -> tuple[str, Any]:
    from armada_flyte.connector.config.settings import resolve_settings

    settings = resolve_settings()
    if settings.targets.node_groups_file is not None:
        path = settings.targets.node_groups_file
        return f"{path} (ARMADA_FLYTE_NODE_GROUPS_FILE)", lambda: NodeGroups.from_yaml(path)
    name = settings.targets.node_groups_preset or "generic"
    source = "ARMADA_FLYTE_NODE_GROUPS_PRESET" if settings.targets.node_groups_preset else "the connector's default"
    return f"preset {name} ({source})", lambda: NodeGroups.preset(name)
