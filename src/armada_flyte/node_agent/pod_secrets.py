"""A pod's Secret references, resolved from the API server as a kubelet resolves them before starting it.

The Secrets a pod names (`env[].valueFrom.secretKeyRef`, `envFrom[].secretRef`, `secret` volumes) are read
from the pod's namespace; the same rules as the embedded cluster's then apply (`cluster.secrets`): a
missing Secret or key that is not optional keeps the container waiting (CreateContainerConfigError) with
Kubernetes' words, and the kubelet tries again later.
"""

from __future__ import annotations

import base64
import urllib.parse
from typing import Any

from armada_flyte.cluster.secrets import SecretStore, resolve_pod_secrets
from armada_flyte.node_agent.kube_api import KubeApi, KubeApiError
from armada_flyte.pod_runner import PodSecrets


def secret_names(pod: Any) -> set[str]:
    """Every Secret the pod spec (armada_client's PodSpec) names. Pure."""
    names = {v.volumeSource.secret.secretName for v in pod.volumes if v.volumeSource.HasField("secret")}
    for container in [*pod.initContainers, *pod.containers]:
        names |= {s.secretRef.localObjectReference.name for s in container.envFrom if s.HasField("secretRef")}
        names |= {
            e.valueFrom.secretKeyRef.localObjectReference.name
            for e in container.env
            if e.HasField("valueFrom") and e.valueFrom.HasField("secretKeyRef")
        }
    return {name for name in names if name}


def secret_store(found: dict[str, dict[str, Any]]) -> SecretStore:
    """The Secrets read from the API server ({name: Secret object}) as a store. Pure."""
    store = SecretStore()
    for name, secret in found.items():
        store.put(name, {key: base64.b64decode(value) for key, value in (secret.get("data") or {}).items()})
    return store


def read_pod_secrets(api: KubeApi, namespace: str, pod: Any) -> PodSecrets:
    """The pod's references resolved from its namespace's Secrets, or SecretUnavailable (cluster.secrets)."""
    found = {}
    for name in sorted(secret_names(pod)):
        path = f"/api/v1/namespaces/{urllib.parse.quote(namespace)}/secrets/{urllib.parse.quote(name)}"
        try:
            found[name] = api.get(path)
        except KubeApiError as exc:
            if exc.code != 404:
                raise
    return resolve_pod_secrets(pod, secret_store(found), namespace)
