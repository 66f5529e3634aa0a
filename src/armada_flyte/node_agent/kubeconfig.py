"""Where the API server is and how to log in to it, read from a kubeconfig (its current context).

A kubeconfig names the server, its certificate authority (a file or inline data) and the user's credential:
a bearer token (inline or `tokenFile`) or a client certificate and key. Only those are read: the agent
needs no exec plugins or auth providers. Mistakes name the field and the fix.
"""

from __future__ import annotations

import base64
import pathlib
import tempfile
from dataclasses import dataclass, field
from typing import Any, Optional

from armada_flyte.config_file import read_yaml
from armada_flyte.errors import InvalidConfig


@dataclass(frozen=True)
class ApiServerLogin:
    """The API server's address and the agent's credential for it (kept out of reprs)."""

    server: str
    ca_file: Optional[pathlib.Path]
    token: str = field(default="", repr=False)
    client_cert: Optional[pathlib.Path] = None
    client_key: Optional[pathlib.Path] = None


def read_kubeconfig(path: str | pathlib.Path) -> ApiServerLogin:
    """The current context's server and credential; inline certificate data goes to private temporary files."""
    path = pathlib.Path(path)
    document = read_yaml(path, "kubeconfig", "pass the kubeconfig the agent logs in with (--kubeconfig)")
    if not isinstance(document, dict):
        raise InvalidConfig(f"kubeconfig {path}", "<not shown>", "a kubeconfig is a YAML mapping")
    context_name = document.get("current-context") or ""
    context = _named(document, "contexts", context_name, path).get("context") or {}
    cluster = _named(document, "clusters", context.get("cluster", ""), path).get("cluster") or {}
    user = _named(document, "users", context.get("user", ""), path).get("user") or {}
    server = str(cluster.get("server") or "")
    if not server.startswith("https://"):
        raise InvalidConfig(f"kubeconfig {path}: cluster.server", server, "give the API server's https:// address")
    folder = path.resolve().parent
    ca = _file_or_data(cluster, "certificate-authority", folder)
    token = str(user.get("token") or "")
    if not token and user.get("tokenFile"):
        token = _relative(folder, user["tokenFile"]).read_text().strip()
    cert = _file_or_data(user, "client-certificate", folder)
    key = _file_or_data(user, "client-key", folder)
    if not token and not (cert and key):
        raise InvalidConfig(
            f"kubeconfig {path}: user",
            "<not shown>",
            "give the user a token, a tokenFile, or a client certificate and key",
        )
    return ApiServerLogin(server.rstrip("/"), ca, token, cert, key)


def _named(document: dict[str, Any], section: str, name: str, path: pathlib.Path) -> dict[str, Any]:
    for entry in document.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry
    raise InvalidConfig(f"kubeconfig {path}: {section}", name, f"no entry of {section} is named {name!r}")


def _relative(folder: pathlib.Path, name: str) -> pathlib.Path:
    given = pathlib.Path(name).expanduser()
    return given if given.is_absolute() else folder / given


def _file_or_data(section: dict[str, Any], key: str, folder: pathlib.Path) -> Optional[pathlib.Path]:
    """`key` as a path, or `key-data` (base64) written to a 0600 temporary file; None when neither is there."""
    if section.get(key):
        return _relative(folder, section[key])
    data = section.get(f"{key}-data")
    if not data:
        return None
    with tempfile.NamedTemporaryFile("wb", prefix=f"node-agent-{key}-", suffix=".pem", delete=False) as out:
        out.write(base64.b64decode(data))
    return pathlib.Path(out.name)
