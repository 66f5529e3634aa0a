"""Image references in the image catalogue: normalised as containerd resolves them, so a pod's
`alpine:3.20.0` finds the catalogue's `docker.io/library/alpine:3.20.0`."""

from __future__ import annotations

import pytest

from armada_flyte.pod_runner.images import normalise_reference

pytestmark = pytest.mark.pure


def test_image_references_normalise_as_containerd_resolves_them() -> None:
    assert normalise_reference("alpine:3.20.0") == "docker.io/library/alpine:3.20.0"
    assert normalise_reference("ubuntu") == "docker.io/library/ubuntu:latest"
    assert normalise_reference("bitnamilegacy/kubectl:1.33.4") == "docker.io/bitnamilegacy/kubectl:1.33.4"
    assert normalise_reference("localhost:5000/x") == "localhost:5000/x:latest"
    assert normalise_reference("ghcr.io/a/b@sha256:ab") == "ghcr.io/a/b@sha256:ab"
