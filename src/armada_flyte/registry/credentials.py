"""Registry credentials, from the caller or from the Docker config that `docker login` writes.

Never from the task's ArmadaConfig: task templates are stored and shown, secrets must not be.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import os
import pathlib
import shutil
import subprocess
from typing import Any, Mapping, Optional

from armada_flyte.registry.reference import DOCKER_HUB

_DOCKER_HUB_KEYS = ("https://index.docker.io/v1/", "index.docker.io", "docker.io", "registry-1.docker.io")
_HELPER_TIMEOUT_SECONDS = 20.0


@dataclasses.dataclass(frozen=True)
class RegistryCredentials:
    """A user name and password (or token) for one registry."""

    username: str
    password: str = dataclasses.field(repr=False)


def docker_config_dir(environ: Optional[Mapping[str, str]] = None) -> pathlib.Path:
    """Where Docker keeps config.json: $DOCKER_CONFIG, else ~/.docker."""
    environ = os.environ if environ is None else environ
    configured = environ.get("DOCKER_CONFIG")
    return pathlib.Path(configured) if configured else pathlib.Path.home() / ".docker"


def credentials_from_docker_config(
    registry: str, config_dir: Optional[pathlib.Path] = None
) -> Optional[RegistryCredentials]:
    """The credentials `docker login` stored for `registry` (host[:port]), or None.

    Reads `credHelpers`, then `auths`, then `credsStore`, running `docker-credential-<name>` for
    helpers as Docker does. A missing or unreadable config means anonymous access.
    """
    path = (config_dir or docker_config_dir()) / "config.json"
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict):
        return None

    keys = _DOCKER_HUB_KEYS if registry == DOCKER_HUB else (registry,)
    helpers = config.get("credHelpers") or {}
    for key in keys:
        helper = helpers.get(key)
        if helper:
            return _from_helper(helper, _helper_server(registry))

    for stored_key, entry in (config.get("auths") or {}).items():
        if _host_of(stored_key) in keys and isinstance(entry, dict):
            found = _from_auths_entry(entry)
            if found is not None:
                return found

    store = config.get("credsStore")
    if store:
        return _from_helper(store, _helper_server(registry))
    return None


def _host_of(key: str) -> str:
    """`https://host:port/v1/` and `host:port` both name `host:port`; Docker Hub's URL stays whole."""
    if key in _DOCKER_HUB_KEYS:
        return key
    return key.split("://", 1)[-1].split("/", 1)[0]


def _helper_server(registry: str) -> str:
    return "https://index.docker.io/v1/" if registry == DOCKER_HUB else registry


def _from_auths_entry(entry: dict[str, Any]) -> Optional[RegistryCredentials]:
    encoded = entry.get("auth")
    if encoded:
        try:
            username, _, password = base64.b64decode(encoded).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        if username:
            return RegistryCredentials(username, password)
    if entry.get("username") and entry.get("password") is not None:
        return RegistryCredentials(str(entry["username"]), str(entry["password"]))
    return None


def _from_helper(helper: str, server: str) -> Optional[RegistryCredentials]:
    """Ask `docker-credential-<helper> get`; a missing helper or entry means no credentials."""
    program = shutil.which(f"docker-credential-{helper}")
    if program is None:
        return None
    try:
        answer = subprocess.run(
            [program, "get"],
            input=server,
            capture_output=True,
            text=True,
            timeout=_HELPER_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if answer.returncode != 0:
        return None
    try:
        data = json.loads(answer.stdout)
    except ValueError:
        return None
    username, secret = data.get("Username"), data.get("Secret")
    if not username or secret is None or username == "<token>":
        return None  # identity tokens need an OAuth exchange this client doesn't do
    return RegistryCredentials(str(username), str(secret))
