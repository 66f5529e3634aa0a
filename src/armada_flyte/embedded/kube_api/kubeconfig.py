"""Kubeconfig files for the embedded cluster's read-only Kubernetes API (plain HTTP on 127.0.0.1).

One file for tools beside the server (client-go, kubectl: `KUBECONFIG=...`), and one in each
process pod's HOME (`~/.kube/config`), standing in for the in-cluster service account: a real
pod reaches the API server over TLS with the token and CA under
/var/run/secrets/kubernetes.io/serviceaccount; here kubectl in the pod reads the kubeconfig.
When the API requires credentials, the file carries one (a bearer token, else a basic user), so it
is created readable by its owner only, before anything is written to it.
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
from typing import Optional

from armada_flyte.server_credentials import ClientCredential

CONTEXT = "armada-flyte-embedded"


def kubeconfig_text(
    server_url: str,
    namespace: str = "default",
    credential: Optional[ClientCredential] = None,
    ca_pem: Optional[bytes] = None,
) -> str:
    """A kubeconfig (JSON, which every kubeconfig reader accepts as YAML) with one context: anonymous,
    or presenting `credential`; `ca_pem` is the certificate an https server is trusted by."""
    user: dict[str, str] = {}
    if credential is not None and credential.token:
        user = {"token": credential.token}
    elif credential is not None:
        user = {"username": credential.user, "password": credential.password}
    name = "anonymous" if credential is None else "armada-flyte-dev"
    cluster = {"server": server_url}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": name, "namespace": namespace}}],
        "current-context": CONTEXT,
        "preferences": {},
    }
    return json.dumps(config, indent=2) + "\n"


def write_private(path: pathlib.Path, text: str) -> None:
    """Write `text` to a new file readable by its owner only (0600 from its creation, whatever the umask)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)


def write_kubeconfig(path: pathlib.Path, text: str) -> pathlib.Path:
    """Write the file atomically (readers never see half of it), readable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.unlink(missing_ok=True)
    write_private(partial, text)
    partial.replace(path)
    return path
