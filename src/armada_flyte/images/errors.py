"""Why an image's platforms could not be read, as types callers can tell apart.

The submission-time check treats them differently: a missing image is a definite answer,
while an unreachable registry or refused credentials only mean "could not check".
"""

from __future__ import annotations

from armada_flyte.errors import ArmadaFlyteError


class RegistryError(ArmadaFlyteError):
    """Base of every failure to read an image's platforms."""


class InvalidImageReference(RegistryError, ValueError):
    """The text is not an image reference (`[host[:port]/]repository[:tag][@digest]`)."""

    def __init__(self, reference: str, problem: str):
        self.reference = reference
        super().__init__(
            f"{reference!r} is not an image reference: {problem}. "
            f"Write it as [registry/]repository[:tag][@sha256:digest], "
            f"e.g. ghcr.io/org/app:1.2 or 127.0.0.1:5000/app@sha256:..."
        )


class ImageNotFound(RegistryError, LookupError):
    """The registry answered, and it has no such repository, tag or digest."""

    def __init__(self, reference: str, detail: str = ""):
        self.reference = reference
        suffix = f" ({detail})" if detail else ""
        super().__init__(
            f"image {reference!r} was not found in its registry{suffix}. "
            f"Check the repository name and tag, and push the image before running tasks with it "
            f"(`docker buildx build --platform linux/amd64,linux/arm64 --push -t {reference} ...`)."
        )


class RegistryAuthFailed(RegistryError):
    """The registry refused the credentials we had (or wanted some and we had none)."""

    def __init__(self, registry: str, reference: str, detail: str):
        self.registry = registry
        self.reference = reference
        super().__init__(
            f"registry {registry} refused access to {reference!r}: {detail}. "
            f"Log in with `docker login {registry}` (credentials are read from the Docker config, "
            f"~/.docker/config.json or $DOCKER_CONFIG/config.json) or pass credentials explicitly."
        )


class RegistryUnreachable(RegistryError, ConnectionError):
    """The registry could not be reached or did not answer usefully (network, TLS, 5xx)."""

    def __init__(self, registry: str, detail: str, hint: str = ""):
        self.registry = registry
        self.detail = detail
        fix = hint or (
            "Check the host and port, that the registry is running and reachable from here, "
            "and whether it speaks plain HTTP (then mark it insecure: --insecure, or the "
            "connector setting registry_insecure_hosts)."
        )
        super().__init__(f"registry {registry} could not be reached: {detail}. {fix}")


class RegistryProtocolError(RegistryError):
    """The registry answered with something the OCI distribution spec doesn't allow."""

    def __init__(self, registry: str, detail: str):
        self.registry = registry
        super().__init__(
            f"registry {registry} gave an answer we could not read: {detail}. "
            f"Check that the address points at a container registry (its API lives under /v2/)."
        )


class DockerDaemonUnavailable(RegistryError):
    """No Docker daemon answered, so the daemon path can't be used."""

    def __init__(self, detail: str):
        super().__init__(
            f"no Docker daemon answered: {detail}. Start Docker or point DOCKER_HOST at a running "
            f"daemon, or read the platforms straight from the registry instead (without --daemon)."
        )
