"""Building the runtime image for several architectures with `docker buildx`.

The Docker SDK can't drive BuildKit's multi-platform builds, so this plans a `docker buildx
build` command line (printable as is), checks first that buildx and the QEMU emulators for
foreign architectures are there, and runs it with buildx's own live progress.
"""

from __future__ import annotations

import dataclasses
import pathlib
import platform as host_platform
import re
import shlex
import shutil
import subprocess
import sys
from typing import Callable, Iterable, Optional, Sequence

from armada_flyte.architecture import Architecture, host_architecture
from armada_flyte.errors import ArmadaFlyteError, InvalidConfig
from armada_flyte.registry.reference import ImageReference
from armada_flyte.task.runtime_image import RUNTIME_PLATFORMS, runtime_dockerfile, runtime_image_dir

DEFAULT_PYTHON_VERSION = "3.11"
SOURCE_CONTEXT = "armada-flyte-source"
"""Named build context the Dockerfile installs armada-flyte from when ARMADA_FLYTE_FROM=source."""
BINFMT_DIR = pathlib.Path("/proc/sys/fs/binfmt_misc")
_QEMU_BINFMT = {Architecture.amd64: "qemu-x86_64", Architecture.arm64: "qemu-aarch64"}
_PYTHON_VERSION = re.compile(r"3\.[0-9]{1,2}")

Runner = Callable[..., "subprocess.CompletedProcess[str]"]


class BuildToolMissing(ArmadaFlyteError):
    """buildx, or the emulation a foreign architecture needs, is not installed; lists each fix."""

    def __init__(self, problems: Sequence[str]):
        self.problems = tuple(problems)
        super().__init__(
            "cannot build the runtime image here:\n" + "\n".join(f"  - {problem}" for problem in self.problems)
        )


@dataclasses.dataclass(frozen=True)
class BuildRequest:
    """What to build: tags, platforms, Python version, and where armada-flyte comes from."""

    tags: tuple[str, ...]
    platforms: tuple[str, ...] = RUNTIME_PLATFORMS
    push: bool = False
    python_version: str = DEFAULT_PYTHON_VERSION
    source: Optional[pathlib.Path] = None
    """A checkout of armada-flyte to install from; None installs it from the package index by version."""
    builder: Optional[str] = None
    progress: str = "auto"

    def __post_init__(self) -> None:
        if not self.tags:
            raise InvalidConfig("--tag", "", "give at least one image reference to tag the build with")
        for tag in self.tags:
            ImageReference.parse(tag)
        if not self.platforms:
            raise InvalidConfig("--platform", "", f"give one or more of {', '.join(RUNTIME_PLATFORMS)}")
        if not _PYTHON_VERSION.fullmatch(self.python_version):
            raise InvalidConfig("--python", self.python_version, "give a Python 3 minor version such as 3.11 or 3.12")

    def command(self) -> list[str]:
        """The exact `docker buildx build` argv; absolute paths, so it runs from any folder."""
        argv = ["docker", "buildx", "build"]
        if self.builder:
            argv += ["--builder", self.builder]
        argv += ["--file", str(runtime_dockerfile())]
        argv += ["--platform", ",".join(self.platforms)]
        argv += ["--build-arg", f"PYTHON_VERSION={self.python_version}"]
        if self.source is not None:
            argv += ["--build-arg", "ARMADA_FLYTE_FROM=source"]
            argv += ["--build-context", f"{SOURCE_CONTEXT}={self.source}"]
        else:
            argv += ["--build-arg", "ARMADA_FLYTE_FROM=index"]
        for tag in self.tags:
            argv += ["--tag", tag]
        if self.push:
            argv.append("--push")
        elif len(self.platforms) == 1:
            argv.append("--load")
        argv += ["--progress", self.progress]
        argv.append(str(runtime_image_dir()))
        return argv

    def printable(self) -> str:
        """The command as one shell line."""
        return shlex.join(self.command())

    @property
    def stays_in_cache(self) -> bool:
        """A multi-platform build that isn't pushed can't be loaded into Docker's image store."""
        return not self.push and len(self.platforms) > 1


def parse_platforms(text: str) -> tuple[str, ...]:
    """`linux/amd64,arm64` -> ("linux/amd64", "linux/arm64"): known architectures only, no repeats."""
    found: list[str] = []
    for part in text.split(","):
        if not part.strip():
            continue
        platform = Architecture.parse(part, field="--platform").platform
        if platform not in found:
            found.append(platform)
    if not found:
        raise InvalidConfig("--platform", text, f"give one or more of {', '.join(RUNTIME_PLATFORMS)}")
    return tuple(found)


def package_checkout() -> Optional[pathlib.Path]:
    """The armada-flyte checkout this package runs from (an editable install), or None."""
    root = runtime_image_dir().parent
    pyproject = root / "pyproject.toml"
    try:
        declares_us = re.search(r'(?m)^name\s*=\s*"armada-flyte"', pyproject.read_text()) is not None
    except OSError:
        return None
    return root if declares_us and (root / "src" / "armada_flyte").is_dir() else None


def preflight_problems(
    platforms: Iterable[str],
    *,
    check_emulation: bool = True,
    binfmt_dir: pathlib.Path = BINFMT_DIR,
    host: Optional[Architecture] = None,
    runner: Runner = subprocess.run,
) -> list[str]:
    """What is missing to build `platforms` here, each with how to add it (empty when all is there)."""
    if shutil.which("docker") is None:
        return [
            "the docker CLI is not on PATH: install Docker (Docker Engine with the buildx plugin, "
            "or Docker Desktop), then check `docker buildx version`"
        ]
    problems = []
    try:
        answer = runner(["docker", "buildx", "version"], capture_output=True, text=True, check=False)
        has_buildx = answer.returncode == 0
    except OSError:
        has_buildx = False
    if not has_buildx:
        problems.append(
            "docker buildx is missing (`docker buildx version` fails): install the buildx plugin - "
            "the docker-buildx-plugin package from Docker's apt/yum repository, docker-buildx on "
            "Debian 13 or Ubuntu, or the binary from the buildx releases in ~/.docker/cli-plugins/"
            "docker-buildx - then check `docker buildx version`"
        )
    if check_emulation:
        problems += _emulation_problems(platforms, binfmt_dir, host if host is not None else host_architecture())
    return problems


def _emulation_problems(platforms: Iterable[str], binfmt_dir: pathlib.Path, host: Optional[Architecture]) -> list[str]:
    problems = []
    for text in platforms:
        architecture = Architecture.parse(text)
        if architecture == host:
            continue
        entry = binfmt_dir / _QEMU_BINFMT[architecture]
        if _binfmt_enabled(entry):
            continue
        host_name = host.value if host is not None else host_platform.machine()
        problems.append(
            f"building {architecture.platform} on this {host_name} machine needs QEMU emulation, and "
            f"{entry} is not registered: run `docker run --privileged --rm tonistiigi/binfmt --install "
            f"{architecture.value}`, or `apt-get install qemu-user-static binfmt-support` on Debian/Ubuntu; "
            f"or build on a builder with native {architecture.value} nodes (--builder NAME skips this check)"
        )
    return problems


def _binfmt_enabled(entry: pathlib.Path) -> bool:
    try:
        return entry.read_text().splitlines()[:1] == ["enabled"]
    except (OSError, IndexError):
        return False


def run_build(request: BuildRequest, *, runner: Runner = subprocess.run) -> int:
    """Check the tools, then run the build with buildx's live progress on this terminal; its exit code."""
    problems = preflight_problems(request.platforms, check_emulation=request.builder is None, runner=runner)
    if problems:
        raise BuildToolMissing(problems)
    print(f"+ {request.printable()}", file=sys.stderr, flush=True)
    if request.stays_in_cache:
        print(
            "note: without --push a multi-platform image stays in buildx's build cache "
            "(Docker's image store can't load an image index); add --push to publish it",
            file=sys.stderr,
            flush=True,
        )
    return runner(request.command(), check=False).returncode
