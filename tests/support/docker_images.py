"""Images for the docker pod runner's tests, in a Docker engine of the tests' own (`support.docker_engine`).

Images are built FROM scratch around a static busybox, so no registry is needed: the host's own
(Debian's busybox-static) for `native_image`. They are tagged under IMAGES, where nothing listens, so
a pull for a platform the engine lacks fails at once. A test plugin (tests/conftest.py): the embedded
server's docker tests and the connector's on a real bed share one engine per module.
"""

from __future__ import annotations

import pathlib
import shutil
import struct
from typing import Iterator

import pytest

from armada_flyte.architecture import host_architecture_name

from support.docker_engine import DockerEngine, EngineUnavailable
from support.real_parts import missing_part

HOST_ARCH = host_architecture_name()
FOREIGN_ARCH = "arm64" if HOST_ARCH == "amd64" else "amd64"
ELF_MACHINE = {62: "amd64", 183: "arm64"}
IMAGES = "127.0.0.1:1/armada-flyte-tests"
"""The test images exist only in the test engine; nothing listens at this registry, so a pull fails at once."""


def build_image(client, folder: pathlib.Path, program: pathlib.Path, arch: str, name: str) -> str:
    """A FROM-scratch image for linux/`arch` holding `program` as /bin/busybox (`folder` is the build context)."""
    if program != folder / "busybox":
        shutil.copy(program, folder / "busybox")
    (folder / "Dockerfile").write_text("FROM scratch\nCOPY busybox /bin/busybox\n")
    tag = f"{IMAGES}/{name}:{arch}"
    client.images.build(path=str(folder), tag=tag, platform=f"linux/{arch}", rm=True)
    return tag


def static_elf_architecture(path: pathlib.Path) -> str | None:
    """The architecture of a statically linked ELF executable; None if it isn't one (or is dynamic)."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        return None
    (machine,) = struct.unpack_from("<H", data, 18)
    (program_headers,) = struct.unpack_from("<Q", data, 32)
    entry_size, count = struct.unpack_from("<HH", data, 54)
    for index in range(count):
        (kind,) = struct.unpack_from("<I", data, program_headers + index * entry_size)
        if kind == 3:  # PT_INTERP: needs a dynamic loader the scratch image lacks
            return None
    return ELF_MACHINE.get(machine)


@pytest.fixture(scope="module")
def docker_engine() -> Iterator[DockerEngine]:
    """A Docker engine of the module's own (a missing one skips locally and fails under CI)."""
    try:
        engine = DockerEngine.start()
    except EngineUnavailable as exc:
        missing_part(str(exc))
    try:
        yield engine
    finally:
        engine.stop()


@pytest.fixture(scope="module")
def docker_client(docker_engine: DockerEngine) -> Iterator[object]:
    import docker

    client = docker.DockerClient(base_url=docker_engine.base_url, version="auto")
    yield client
    client.close()


@pytest.fixture(scope="module")
def native_image(docker_client, tmp_path_factory: pytest.TempPathFactory) -> str:
    """linux/<host arch>, from the host's static busybox; the engine holds it for that platform only."""
    found = shutil.which("busybox")
    if found is None or static_elf_architecture(pathlib.Path(found)) != HOST_ARCH:
        missing_part(f"no static {HOST_ARCH} busybox on PATH (apt-get install busybox-static)")
    return build_image(docker_client, tmp_path_factory.mktemp("native"), pathlib.Path(found), HOST_ARCH, "busybox")


def preferring_the_other_first(image: str):
    """A task running `/bin/busybox true` in `image` (its platforms not declared), preferring the other
    architecture first; spill_after is 600 s, so only a move at once is in time."""
    from armada_flyte import ArmadaConfig

    from support.armada_templates import python_template

    template = python_template("", ArmadaConfig(architecture=[FOREIGN_ARCH, HOST_ARCH], spill_after=600))
    template.container.image = image
    del template.container.command[:]
    template.container.command.extend(["/bin/busybox", "true"])
    return template


def assert_moved_on_to_the_host(resource, image: str) -> None:
    """What a task of `preferring_the_other_first` in the host's `image` says at its end, on any server: it
    succeeded on the host's architecture, moved there at once in the same attempt because the image has no variant
    for the other, the message naming both."""
    from flyteidl2.core.execution_pb2 import TaskExecution

    assert resource.phase == TaskExecution.SUCCEEDED, resource.message
    info = resource.custom_info
    assert (info["architecture"], info["moved_from"], info["moved_by"]) == (
        HOST_ARCH,
        FOREIGN_ARCH,
        "platform mismatch",
    ), resource.message
    assert resource.message.startswith(
        f"moved from {FOREIGN_ARCH} to {HOST_ARCH} at once: the image cannot run on {FOREIGN_ARCH} ("
    ), resource.message
    assert (
        f"image {image} has no linux/{FOREIGN_ARCH} variant, which node set {FOREIGN_ARCH} needs: Docker holds it "
        f"for linux/{HOST_ARCH} only"
    ) in resource.message, resource.message
    assert info["node"].startswith(f"{HOST_ARCH}-"), dict(info)
