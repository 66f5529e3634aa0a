"""Real registries (Debian's docker-registry) on 127.0.0.1 holding images pushed over the API.

Three registries, one per access style: anonymous, basic auth (htpasswd) and bearer tokens
(a token service run in the test process). A Docker engine (`dockerd`) is started only by the
tests that read platforms through the daemon.
"""

from __future__ import annotations

import base64
import dataclasses
import pathlib
import shutil
from typing import Callable, Iterator

import pytest

from support import real_parts
from support.docker_engine import DockerEngine, EngineUnavailable
from support.oci_upload import RegistryUploader
from support.registry_process import PASSWORD, USER, RegistryProcess, free_port, htpasswd_line
from support.token_service import ISSUER, SERVICE, TokenService, TokenSigner


@pytest.fixture(scope="session")
def missing_part() -> Callable[[str], None]:
    """The real-parts rule: skip locally, fail under CI."""
    return real_parts.missing_part


@pytest.fixture(scope="session")
def registry_binary(missing_part: Callable[[str], None]) -> str:
    found = shutil.which("docker-registry")
    if found is None:
        missing_part("Debian's docker-registry is not installed (apt-get install docker-registry)")
    return found


@dataclasses.dataclass(frozen=True)
class PushedImages:
    """References to what the session's anonymous registry holds."""

    host: str
    multi: str
    """OCI index: linux/amd64, linux/arm64/v8, and an unknown/unknown attestation."""
    multi_digest: str
    amd64_only: str
    """A single OCI manifest whose config says linux/amd64."""
    amd64_digest: str
    arm64_only: str
    """A single Docker v2 manifest whose config says linux/arm64/v8."""
    docker_list: str
    """Docker manifest list: linux/amd64 and linux/arm/v7."""
    missing_tag: str
    missing_repository: str


def _start_registry(folder: pathlib.Path, auth: dict | None = None) -> RegistryProcess:
    try:
        return RegistryProcess(folder, auth=auth).start()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def registry(registry_binary: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryProcess]:
    server = _start_registry(tmp_path_factory.mktemp("registry"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def images(registry: RegistryProcess) -> PushedImages:
    host = registry.host
    upload = RegistryUploader(registry.url)
    try:
        amd64 = upload.push_image("multi", None, "amd64")
        arm64 = upload.push_image("multi", None, "arm64", variant="v8")
        attestation = upload.push_attestation("multi", amd64)
        multi_digest = upload.push_index("multi", "1", [amd64, arm64, attestation])

        amd64_only = upload.push_image("amd64only", "1", "amd64")
        upload.push_image("arm64only", "1", "arm64", variant="v8", docker_types=True)

        list_amd64 = upload.push_image("dockerlist", None, "amd64", docker_types=True)
        list_arm = upload.push_image("dockerlist", None, "arm", variant="v7", docker_types=True)
        upload.push_index("dockerlist", "1", [list_amd64, list_arm], docker_types=True)
    finally:
        upload.close()
    return PushedImages(
        host=host,
        multi=f"{host}/multi:1",
        multi_digest=f"{host}/multi@{multi_digest}",
        amd64_only=f"{host}/amd64only:1",
        amd64_digest=f"{host}/amd64only@{amd64_only['digest']}",
        arm64_only=f"{host}/arm64only:1",
        docker_list=f"{host}/dockerlist:1",
        missing_tag=f"{host}/multi:no-such-tag",
        missing_repository=f"{host}/no-such-repository:1",
    )


@dataclasses.dataclass(frozen=True)
class AuthRegistry:
    """A registry that wants USER/PASSWORD, holding `multi:1` (amd64+arm64) and `amd64only:1`."""

    host: str
    multi: str
    amd64_only: str


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def _push_pair(upload: RegistryUploader, host: str) -> AuthRegistry:
    try:
        amd64 = upload.push_image("multi", None, "amd64")
        arm64 = upload.push_image("multi", None, "arm64", variant="v8")
        upload.push_index("multi", "1", [amd64, arm64])
        upload.push_image("amd64only", "1", "amd64")
    finally:
        upload.close()
    return AuthRegistry(host=host, multi=f"{host}/multi:1", amd64_only=f"{host}/amd64only:1")


@pytest.fixture(scope="session")
def basic_registry(
    registry_binary: str, tmp_path_factory: pytest.TempPathFactory, missing_part: Callable[[str], None]
) -> Iterator[AuthRegistry]:
    line = htpasswd_line(USER, PASSWORD)
    if line is None:
        missing_part("no bcrypt htpasswd maker: install apache2-utils (htpasswd) or the bcrypt Python package")
    folder = tmp_path_factory.mktemp("basic-registry")
    (folder / "htpasswd").write_text(line + "\n")
    server = _start_registry(folder, {"htpasswd": {"realm": "armada-flyte-tests", "path": str(folder / "htpasswd")}})
    try:
        yield _push_pair(RegistryUploader(server.url, _basic(USER, PASSWORD)), server.host)
    finally:
        server.stop()


@dataclasses.dataclass(frozen=True)
class TokenRegistry(AuthRegistry):
    service: TokenService


@pytest.fixture(scope="session")
def token_registry(registry_binary: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TokenRegistry]:
    folder = tmp_path_factory.mktemp("token-registry")
    signer = TokenSigner()
    service = TokenService(signer, USER, PASSWORD).start()
    auth = {
        "token": {
            "realm": service.realm,
            "service": SERVICE,
            "issuer": ISSUER,
            "rootcertbundle": str(signer.write_bundle(folder / "token-signer.pem")),
        }
    }
    server = _start_registry(folder, auth)
    try:
        scopes = [f"repository:{name}:pull,push" for name in ("multi", "amd64only")]
        pushed = _push_pair(RegistryUploader(server.url, "Bearer " + signer.token(USER, scopes)), server.host)
        yield TokenRegistry(host=pushed.host, multi=pushed.multi, amd64_only=pushed.amd64_only, service=service)
    finally:
        server.stop()
        service.stop()


@pytest.fixture
def unreachable_host() -> str:
    """A loopback address where nothing listens (connections are refused at once)."""
    return f"127.0.0.1:{free_port()}"


@pytest.fixture
def docker_config(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """An empty Docker config folder named by DOCKER_CONFIG: tests see only the logins they write."""
    folder = tmp_path / "docker-config"
    folder.mkdir()
    monkeypatch.setenv("DOCKER_CONFIG", str(folder))
    return folder


@pytest.fixture(scope="session")
def dockerd(
    registry: RegistryProcess, basic_registry: AuthRegistry, missing_part: Callable[[str], None]
) -> Iterator[str]:
    """A Docker engine on a private socket, with the test registries as insecure registries; yields DOCKER_HOST."""
    try:
        engine = DockerEngine.start(insecure_registries=(registry.host, basic_registry.host))
    except EngineUnavailable as exc:
        missing_part(str(exc))
    try:
        yield engine.base_url
    finally:
        engine.stop()
