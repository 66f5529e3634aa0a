"""Which platforms an image supports, asked through a Docker daemon (Docker SDK for Python).

Where a daemon runs, it already knows the user's logins, mirrors and insecure registries,
so its answer matches what `docker pull` would see. The answer has the same shape as the
registry path's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Union

from armada_flyte.errors import (
    DockerDaemonUnavailable,
    ImageNotFound,
    RegistryAuthFailed,
    RegistryUnreachable,
)
from armada_flyte.registry.credentials import RegistryCredentials
from armada_flyte.registry.platforms import MANIFEST_MEDIA_TYPES, ImagePlatforms, Platform
from armada_flyte.registry.reference import ImageReference

if TYPE_CHECKING:
    import docker

_NOT_FOUND_HINTS = ("manifest unknown", "not found", "name unknown", "no such")
_AUTH_HINTS = ("unauthorized", "authentication required", "denied", "no basic auth credentials")


def platforms_via_docker(
    reference: Union[str, ImageReference],
    client: Optional[docker.APIClient] = None,
    auth_config: Optional[Mapping[str, str]] = None,
    insecure_hosts: Iterable[str] = (),
) -> ImagePlatforms:
    """Ask the daemon (`client`, else the one DOCKER_HOST names) for `reference`'s platforms.

    `auth_config` ({"username": ..., "password": ...}) overrides the daemon client's stored login.
    Daemons before the OCI image manifest was handled in their distribution API (Debian 12's
    20.10 among them) list no platform for a single OCI manifest; its config blob is then read
    from the registry, by the digest the daemon resolved (`insecure_hosts` as for the registry path).
    """
    ref = reference if isinstance(reference, ImageReference) else ImageReference.parse(reference)
    try:
        import docker
        import docker.errors
        import docker.utils
    except ModuleNotFoundError as exc:
        raise DockerDaemonUnavailable(
            "the Docker SDK is not installed (pip install 'armada-flyte[connector]')"
        ) from exc

    if client is None:
        try:
            client = docker.APIClient(version="auto", **docker.utils.kwargs_from_env())
        except docker.errors.DockerException as exc:
            raise DockerDaemonUnavailable(str(exc)) from exc
    try:
        answer: dict[str, Any] = client.inspect_distribution(
            str(ref), auth_config=dict(auth_config) if auth_config else None
        )
    except docker.errors.APIError as exc:
        raise _registry_error(ref, exc) from exc
    except docker.errors.DockerException as exc:
        raise DockerDaemonUnavailable(str(exc)) from exc
    except OSError as exc:
        raise DockerDaemonUnavailable(str(exc)) from exc

    descriptor = answer.get("Descriptor") or {}
    digest = str(descriptor.get("digest", ""))
    media_type = str(descriptor.get("mediaType", ""))
    found = {Platform.from_oci(entry) for entry in answer.get("Platforms") or []}
    platforms = tuple(sorted(p for p in found if not p.is_unknown))
    if not platforms and media_type in MANIFEST_MEDIA_TYPES and digest:
        platforms = _config_platforms(ref, digest, auth_config, insecure_hosts)
    return ImagePlatforms(reference=str(ref), digest=digest, media_type=media_type, platforms=platforms)


def _config_platforms(
    ref: ImageReference, digest: str, auth_config: Optional[Mapping[str, str]], insecure_hosts: Iterable[str]
) -> tuple[Platform, ...]:
    from armada_flyte.registry.client import image_platforms

    credentials = None
    if auth_config and auth_config.get("username"):
        credentials = {ref.registry: RegistryCredentials(auth_config["username"], auth_config.get("password", ""))}
    pinned = ImageReference(registry=ref.registry, repository=ref.repository, digest=digest)
    return image_platforms(pinned, insecure_hosts=insecure_hosts, credentials=credentials).platforms


def _registry_error(ref: ImageReference, exc: Exception) -> Exception:
    """The daemon reports registry trouble as HTTP 500s with a message; sort them into our types."""
    message = str(getattr(exc, "explanation", None) or exc)
    lowered = message.lower()
    status = getattr(exc, "status_code", None)
    if any(hint in lowered for hint in _AUTH_HINTS):
        return RegistryAuthFailed(ref.registry, str(ref), message)
    if status == 404 or any(hint in lowered for hint in _NOT_FOUND_HINTS):
        return ImageNotFound(str(ref), message)
    return RegistryUnreachable(ref.registry, f"the Docker daemon could not read it: {message}")
