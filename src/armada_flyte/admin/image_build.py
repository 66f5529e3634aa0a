"""Building the runtime image for several architectures with `docker buildx`.

The Docker SDK can't drive BuildKit's multi-platform builds, so this plans the commands (a
wheel of the checkout, when there is one, then one `docker buildx build`), prints them as they
run (or only prints them), checks first that buildx, a usable builder and the QEMU emulators
are there, and runs the build with buildx's own live progress.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import shlex
import subprocess
import sys
import time
from typing import Mapping, Optional

from armada_flyte.admin.image_preflight import Runner, preflight_problems
from armada_flyte.architecture import Architecture
from armada_flyte.errors import ArmadaFlyteError, InvalidConfig, InvalidImageReference
from armada_flyte.registry.reference import ImageReference
from armada_flyte.task.runtime_image import RUNTIME_PLATFORMS, runtime_dockerfile, runtime_image_dir

DEFAULT_PYTHON_VERSION = "3.11"
WHEEL_CONTEXT = "armada-flyte-wheel"
"""Named build context holding armada-flyte's wheel, which the Dockerfile installs when ARMADA_FLYTE_FROM=wheel."""
PIP_CERT_SECRET = "pip-cert"
"""Build secret with the CA bundle pip trusts inside the build (a TLS-inspecting proxy's, for one)."""
PIP_CERT_ENV = ("PIP_CERT", "SSL_CERT_FILE")
"""Where the bundle comes from when --pip-cert isn't given: what pip on this machine trusts."""
WHEEL_EPOCH = "315532800"
"""SOURCE_DATE_EPOCH of the wheel (1980-01-01): the same checkout gives the same bytes, so BuildKit's cache holds."""
_PYTHON_VERSION = re.compile(r"3\.[0-9]{1,2}")


class BuildToolMissing(ArmadaFlyteError):
    """buildx, a usable builder, or the emulation a foreign architecture needs is missing; lists each fix."""

    def __init__(self, problems: list[str]):
        self.problems = tuple(problems)
        super().__init__(
            "cannot build the runtime image here:\n" + "\n".join(f"  - {problem}" for problem in self.problems)
        )


@dataclasses.dataclass(frozen=True)
class Step:
    """One command of the build, with the environment variables it adds."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def printable(self) -> str:
        return " ".join([*(f"{k}={shlex.quote(v)}" for k, v in self.env.items()), shlex.join(self.argv)])


@dataclasses.dataclass(frozen=True)
class BuildRequest:
    """What to build: tags, platforms, Python version and base, and where armada-flyte comes from."""

    tags: tuple[str, ...]
    platforms: tuple[str, ...] = RUNTIME_PLATFORMS
    push: bool = False
    python_version: str = DEFAULT_PYTHON_VERSION
    source: Optional[pathlib.Path] = None
    """A checkout of armada-flyte: its wheel is built first and installed; None installs it from the index."""
    wheel_dir: Optional[pathlib.Path] = None
    """Where the checkout's wheel goes (default: the cache's runtime-wheel folder)."""
    builder: Optional[str] = None
    progress: str = "auto"
    base_image: Optional[str] = None
    """A full reference of a Debian-family image with python3 and venv; None uses the official Python image."""
    pip_cert: Optional[pathlib.Path] = None

    def __post_init__(self) -> None:
        if not self.tags:
            raise InvalidConfig("--tag", "", "give at least one image reference to tag the build with")
        for tag in self.tags:
            ImageReference.parse(tag)
        if not self.platforms:
            raise InvalidConfig("--platform", "", f"give one or more of {', '.join(RUNTIME_PLATFORMS)}")
        if not _PYTHON_VERSION.fullmatch(self.python_version):
            raise InvalidConfig("--python", self.python_version, "give a Python 3 minor version such as 3.11 or 3.12")
        if self.base_image is not None:
            try:
                ImageReference.parse(self.base_image)
            except InvalidImageReference as exc:
                raise InvalidConfig("--base-image", self.base_image, str(exc)) from None
        if self.pip_cert is not None and not self.pip_cert.is_file():
            raise InvalidConfig("--pip-cert", str(self.pip_cert), "give a readable PEM bundle of CA certificates")

    @property
    def wheel_folder(self) -> pathlib.Path:
        return self.wheel_dir if self.wheel_dir is not None else default_wheel_dir()

    def wheel_step(self) -> Optional[Step]:
        """`pip wheel` of the checkout, without dependencies (they come from the index in the build)."""
        if self.source is None:
            return None
        argv = (sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(self.wheel_folder))
        return Step((*argv, str(self.source)), {"SOURCE_DATE_EPOCH": WHEEL_EPOCH})

    def command(self) -> list[str]:
        """The exact `docker buildx build` argv; absolute paths, so it runs from any folder."""
        argv = ["docker", "buildx", "build"]
        if self.builder:
            argv += ["--builder", self.builder]
        argv += ["--file", str(runtime_dockerfile())]
        argv += ["--platform", ",".join(self.platforms)]
        argv += ["--build-arg", f"PYTHON_VERSION={self.python_version}"]
        if self.base_image:
            argv += ["--build-arg", f"BASE_IMAGE={self.base_image}"]
        if self.source is not None:
            argv += ["--build-arg", "ARMADA_FLYTE_FROM=wheel"]
            argv += ["--build-context", f"{WHEEL_CONTEXT}={self.wheel_folder}"]
        else:
            argv += ["--build-arg", "ARMADA_FLYTE_FROM=index"]
        if self.pip_cert is not None:
            argv += ["--secret", f"id={PIP_CERT_SECRET},src={self.pip_cert}"]
        for tag in self.tags:
            argv += ["--tag", tag]
        if self.push:
            argv.append("--push")
        elif len(self.platforms) == 1:
            argv.append("--load")
        argv += ["--progress", self.progress]
        argv.append(str(runtime_image_dir()))
        return argv

    def steps(self) -> list[Step]:
        wheel = self.wheel_step()
        return ([wheel] if wheel is not None else []) + [Step(tuple(self.command()))]

    def printable(self) -> str:
        """Every command, one shell line each, in the order they run."""
        return "\n".join(step.printable() for step in self.steps())

    @property
    def stays_in_cache(self) -> bool:
        """A multi-platform build that isn't pushed can't be loaded into Docker's image store."""
        return not self.push and len(self.platforms) > 1


def default_wheel_dir() -> pathlib.Path:
    cache = os.environ.get("ARMADA_FLYTE_CACHE") or str(pathlib.Path.home() / ".cache" / "armada-flyte")
    return pathlib.Path(cache) / "runtime-wheel"


def pip_cert_from_environment(environ: Mapping[str, str] = os.environ) -> Optional[pathlib.Path]:
    """The CA bundle pip trusts here (PIP_CERT, else SSL_CERT_FILE), if it names a file; else None."""
    for name in PIP_CERT_ENV:
        value = environ.get(name)
        if value and pathlib.Path(value).is_file():
            return pathlib.Path(value)
    return None


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


def run_build(request: BuildRequest, *, runner: Runner = subprocess.run) -> int:
    """Check the tools, then run each step with its live output on this terminal; the first failing exit code."""
    problems = preflight_problems(
        request.platforms, builder=request.builder, check_emulation=request.builder is None, runner=runner
    )
    if problems:
        raise BuildToolMissing(problems)
    if request.stays_in_cache:
        _say(
            "note: without --push a multi-platform image stays in buildx's build cache "
            "(Docker's image store can't load an image index); add --push to publish it"
        )
    if request.source is not None:
        request.wheel_folder.mkdir(parents=True, exist_ok=True)
    for step in request.steps():
        _say(f"+ {step.printable()}")
        started = time.monotonic()
        code = runner(list(step.argv), env={**os.environ, **step.env} if step.env else None, check=False).returncode
        if code != 0:
            _say(f"failed with exit code {code} after {time.monotonic() - started:.0f}s")
            return code
        _say(f"done in {time.monotonic() - started:.0f}s")
    return 0


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
