"""Kubernetes Secrets for the embedded cluster, and resolving a pod's references to them.

A real cluster's kubelet fills `env[].valueFrom.secretKeyRef`, `envFrom[].secretRef` and `secret`
volumes from the Secrets of the pod's namespace before the container starts; a reference to a
Secret or key that does not exist (and is not `optional`) keeps the container from starting
(waiting reason `CreateContainerConfigError`, or a failed volume mount). The embedded server does
the same from the Secrets it is given: `EmbeddedArmada.add_secret`, a secrets file of Kubernetes
Secret manifests, or `armada-flyte dev --secret NAME KEY=VALUE`. Its Secrets are visible in every
namespace (the embedded cluster has no namespace objects).
"""

from __future__ import annotations

import base64
import pathlib
import posixpath
import threading
from typing import Any, Iterable, Mapping, Optional

import yaml

from armada_flyte.errors import InvalidConfig
from armada_flyte.kube import secret_key_problem, secret_name_problem
from armada_flyte.pod_runner.pod_secrets import (
    DEFAULT_SECRET_FILE_MODE,
    ContainerSecrets,
    PodSecrets,
    SecretFile,
)

WAITING_REASON = "CreateContainerConfigError"


class SecretStore:
    """The cluster's Secrets: name -> {key: bytes}. Thread-safe; later puts replace earlier ones."""

    def __init__(self) -> None:
        self._secrets: dict[str, dict[str, bytes]] = {}
        self._lock = threading.Lock()

    def put(self, name: str, data: Mapping[str, str | bytes]) -> None:
        problem = secret_name_problem(name)
        if problem:
            raise InvalidConfig("secret name", name, problem)
        values = {}
        for key, value in data.items():
            problem = secret_key_problem(key)
            if problem:
                raise InvalidConfig(f"secret {name} key", key, problem)
            values[key] = value.encode() if isinstance(value, str) else bytes(value)
        with self._lock:
            self._secrets[name] = values

    def get(self, name: str) -> Optional[dict[str, bytes]]:
        with self._lock:
            found = self._secrets.get(name)
            return dict(found) if found is not None else None

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._secrets)

    def load_file(self, path: str | pathlib.Path) -> list[str]:
        """Add the Kubernetes Secret manifests of a YAML file (`data` base64, `stringData` plain); their names."""
        path = pathlib.Path(path)
        try:
            documents = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        except (OSError, yaml.YAMLError) as exc:
            raise InvalidConfig("secrets file", str(path), f"could not read it: {exc}") from None
        names = []
        for document in documents:
            name, data = _manifest_data(document, path)
            self.put(name, data)
            names.append(name)
        return names


def parse_secret_argument(name: str, pairs: Iterable[str]) -> tuple[str, dict[str, str]]:
    """`--secret NAME KEY=VALUE ...` as (name, data)."""
    data = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidConfig(f"--secret {name}", "<not shown>", "give each key as KEY=VALUE")
        data[key] = value
    if not data:
        raise InvalidConfig(f"--secret {name}", "", "give at least one KEY=VALUE after the secret's name")
    return name, data


def _manifest_data(document: Any, path: pathlib.Path) -> tuple[str, dict[str, bytes]]:
    where = f"secrets file {path}"
    if not isinstance(document, dict) or document.get("kind") != "Secret":
        raise InvalidConfig(where, "<not shown>", "each document must be a Kubernetes manifest with kind: Secret")
    name = (document.get("metadata") or {}).get("name")
    if not name:
        raise InvalidConfig(where, "<not shown>", "a Secret needs metadata.name")
    data: dict[str, bytes] = {}
    for key, value in (document.get("data") or {}).items():
        try:
            data[key] = base64.b64decode(str(value), validate=True)
        except ValueError:
            raise InvalidConfig(f"{where}: Secret {name} data.{key}", "<not shown>", "data values are base64") from None
    for key, value in (document.get("stringData") or {}).items():
        data[key] = str(value).encode()
    return name, data


class SecretUnavailable(Exception):
    """A required Secret or key is missing; the message is Kubernetes' reason for the waiting container."""


def resolve_pod_secrets(pod: Any, store: SecretStore, namespace: str) -> PodSecrets:
    """Every container's Secret references, resolved from `store`, or SecretUnavailable for the first
    required one that is missing."""
    containers: dict[str, ContainerSecrets] = {}
    mount_paths: list[str] = []
    for container in [*pod.initContainers, *pod.containers]:
        env_from, env = _env_secrets(container, store, namespace)
        files, paths = _volume_files(pod, container, store, namespace)
        containers[container.name] = ContainerSecrets(env_from, env, tuple(files))
        mount_paths += [path for path in paths if path not in mount_paths]
    volumes = frozenset(v.name for v in pod.volumes if v.volumeSource.HasField("secret"))
    return PodSecrets(containers, volumes, tuple(mount_paths))


def _env_secrets(container: Any, store: SecretStore, namespace: str) -> tuple[dict[str, str], dict[str, str]]:
    env_from: dict[str, str] = {}
    for source in container.envFrom:
        if not source.HasField("secretRef"):
            continue
        ref = source.secretRef
        name = ref.localObjectReference.name
        found = store.get(name)
        if found is None:
            if ref.optional:
                continue
            raise SecretUnavailable(f'secret "{name}" not found')
        for key, value in found.items():
            env_from[source.prefix + key] = _text(value)
    env: dict[str, str] = {}
    for var in container.env:
        if not (var.HasField("valueFrom") and var.valueFrom.HasField("secretKeyRef")):
            continue
        ref = var.valueFrom.secretKeyRef
        name = ref.localObjectReference.name
        found = store.get(name)
        if found is None or ref.key not in found:
            if ref.optional:
                continue
            if found is None:
                raise SecretUnavailable(f'secret "{name}" not found')
            raise SecretUnavailable(f"couldn't find key {ref.key} in Secret {namespace}/{name}")
        env[var.name] = _text(found[ref.key])
    return env_from, env


def _volume_files(pod: Any, container: Any, store: SecretStore, namespace: str) -> tuple[list[SecretFile], list[str]]:
    volumes = {v.name: v for v in pod.volumes if v.volumeSource.HasField("secret")}
    files: list[SecretFile] = []
    paths: list[str] = []
    for mount in container.volumeMounts:
        volume = volumes.get(mount.name)
        if volume is None:
            continue
        source = volume.volumeSource.secret
        found = store.get(source.secretName)
        mode = source.defaultMode if source.HasField("defaultMode") else DEFAULT_SECRET_FILE_MODE
        paths.append(mount.mountPath)
        if found is None:
            if source.optional:
                continue
            raise SecretUnavailable(
                f'MountVolume.SetUp failed for volume "{volume.name}" : secret "{source.secretName}" not found'
            )
        items = [(item.key, item.path, item.mode if item.HasField("mode") else mode) for item in source.items]
        if not source.items:
            items = [(key, key, mode) for key in sorted(found)]
        for key, relative, item_mode in items:
            if key not in found:
                if source.optional:
                    continue
                raise SecretUnavailable(
                    f'MountVolume.SetUp failed for volume "{volume.name}" : '
                    f"couldn't find key {key} in Secret {namespace}/{source.secretName}"
                )
            if mount.subPath and relative != mount.subPath:
                continue
            target = mount.mountPath if mount.subPath else posixpath.join(mount.mountPath, relative)
            files.append(SecretFile(target, found[key], item_mode))
    return files, paths


def _text(value: bytes) -> str:
    return value.decode("utf-8", errors="replace")
