"""Kubeconfig files for the embedded cluster's read-only Kubernetes API (plain HTTP on 127.0.0.1).

One file for tools beside the server (client-go, kubectl: `KUBECONFIG=...`), and one in each
process pod's HOME (`~/.kube/config`), standing in for the in-cluster service account: a real
pod reaches the API server over TLS with the token and CA under
/var/run/secrets/kubernetes.io/serviceaccount; here kubectl in the pod reads the kubeconfig.
"""

from __future__ import annotations

import json
import os
import pathlib

CONTEXT = "armada-flyte-embedded"


def kubeconfig_text(server_url: str, namespace: str = "default") -> str:
    """A kubeconfig (JSON, which every kubeconfig reader accepts as YAML) with one anonymous context."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": server_url}}],
        "users": [{"name": "anonymous", "user": {}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": "anonymous", "namespace": namespace}}],
        "current-context": CONTEXT,
        "preferences": {},
    }
    return json.dumps(config, indent=2) + "\n"


def write_kubeconfig(path: pathlib.Path, server_url: str, namespace: str = "default") -> pathlib.Path:
    """Write the file atomically (readers never see half of it), readable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(kubeconfig_text(server_url, namespace))
    partial.chmod(0o600)
    partial.replace(path)
    return path
