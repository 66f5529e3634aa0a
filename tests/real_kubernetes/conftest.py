"""The Kubernetes bed's fixtures, for every test of this folder."""

from support.real_kubernetes import armada, kubernetes_bed  # noqa: F401
