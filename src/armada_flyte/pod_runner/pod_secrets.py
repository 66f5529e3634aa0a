"""A pod's Secret references as resolved before launch: what the runner puts into its containers.

Resolving them (from a cluster's Secrets, refusing a missing one) is the launcher's job; the
runner only gets the values, so it never sees a Secret store.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_SECRET_FILE_MODE = 0o644
"""Kubernetes' defaultMode for the files of a secret volume."""


@dataclass(frozen=True)
class SecretFile:
    """One file a secret volume puts into the container: its absolute path, content and mode."""

    path: str
    data: bytes
    mode: int = DEFAULT_SECRET_FILE_MODE


@dataclass(frozen=True)
class ContainerSecrets:
    """What one container's Secret references resolve to: env values by name, and files to place."""

    env_from: dict[str, str] = field(default_factory=dict)
    """Variables from `envFrom.secretRef` (the container's own `env` entries override them)."""
    env: dict[str, str] = field(default_factory=dict)
    """Values of `env[].valueFrom.secretKeyRef` entries, by variable name."""
    files: tuple[SecretFile, ...] = ()
    """Files of the secret volumes the container mounts, at the paths it sees them."""


@dataclass(frozen=True)
class PodSecrets:
    """Every container's resolved Secret references (init containers too), by container name."""

    containers: dict[str, ContainerSecrets] = field(default_factory=dict)
    secret_volumes: frozenset[str] = frozenset()
    """Names of the pod's secret volumes."""
    mount_paths: tuple[str, ...] = ()
    """Where any container mounts a secret volume (the process runner maps these into the sandbox)."""

    def of(self, container: str) -> ContainerSecrets:
        return self.containers.get(container) or ContainerSecrets()
