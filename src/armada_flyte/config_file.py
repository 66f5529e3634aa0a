"""Read a YAML configuration file, failing with an error that names the setting and the fix."""

from __future__ import annotations

import pathlib
from typing import Any

import yaml

from armada_flyte.errors import InvalidConfig


def read_yaml(path: str | pathlib.Path, field: str, missing_fix: str) -> Any:
    """The parsed file; `InvalidConfig` naming `field` when it is missing or not YAML."""
    path = pathlib.Path(path)
    try:
        return yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise InvalidConfig(field, str(path), f"the file does not exist; {missing_fix}") from None
    except yaml.YAMLError as exc:
        raise InvalidConfig(field, str(path), f"not valid YAML: {exc}") from None
