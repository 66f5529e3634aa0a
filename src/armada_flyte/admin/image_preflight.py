"""Can this machine build the runtime image? Checks buildx, a usable builder, and QEMU for foreign platforms.

Each problem comes with how to fix it. `docker buildx version` passing is not enough: the
default builder is often the `docker` driver with no daemon behind it, so the builder itself is
asked (`docker buildx inspect --bootstrap`), and the platforms it lists must cover the build.
"""

from __future__ import annotations

import pathlib
import platform as host_platform
import re
import shutil
import subprocess
from typing import Callable, Iterable, Optional, Sequence

from armada_flyte.architecture import Architecture, host_architecture

BINFMT_DIR = pathlib.Path("/proc/sys/fs/binfmt_misc")
_QEMU_BINFMT = {Architecture.amd64: "qemu-x86_64", Architecture.arm64: "qemu-aarch64"}
TOOLS_SCRIPT = "scripts/build-image-tools.sh"
BUILDER_SCRIPT = "scripts/image-builder.sh"

Runner = Callable[..., "subprocess.CompletedProcess[str]"]


def preflight_problems(
    platforms: Iterable[str],
    *,
    builder: Optional[str] = None,
    check_emulation: bool = True,
    binfmt_dir: pathlib.Path = BINFMT_DIR,
    host: Optional[Architecture] = None,
    runner: Runner = subprocess.run,
) -> list[str]:
    """What is missing to build `platforms` here, each with how to add it (empty when all is there)."""
    wanted = list(platforms)
    if shutil.which("docker") is None:
        return [
            "the docker CLI is not on PATH: install Docker (Docker Engine with the buildx plugin, "
            "or Docker Desktop), then check `docker buildx version`"
        ]
    if not _answers(runner, ["docker", "buildx", "version"]):
        return [
            "docker buildx is missing (`docker buildx version` fails): install the buildx plugin - "
            "the docker-buildx-plugin package from Docker's apt/yum repository, docker-buildx on "
            "Debian 13 or Ubuntu, or the binary from the buildx releases in ~/.docker/cli-plugins/"
            f"docker-buildx; from an armada-flyte checkout, `{TOOLS_SCRIPT}` builds buildx and "
            "BuildKit from source through the Go module proxy - then check `docker buildx version`"
        ]
    problems = []
    if check_emulation:
        problems += _emulation_problems(wanted, binfmt_dir, host if host is not None else host_architecture())
    reported = {p for p in wanted if any(p in problem for problem in problems)}
    problems += builder_problems(wanted, builder, runner, skip=reported)
    return problems


def builder_problems(
    platforms: Sequence[str], builder: Optional[str], runner: Runner, *, skip: Iterable[str] = ()
) -> list[str]:
    """Ask the builder to start (`docker buildx inspect --bootstrap`); problems if it can't, or lacks a platform."""
    argv = ["docker", "buildx", "inspect", "--bootstrap"] + ([builder] if builder else [])
    name = f"buildx builder {builder}" if builder else "the current buildx builder"
    try:
        answer = runner(argv, capture_output=True, text=True, check=False)
    except OSError as exc:
        return [f"`{' '.join(argv)}` could not run: {exc}"]
    output = f"{answer.stdout or ''}\n{answer.stderr or ''}"
    # An unreachable default builder still exits 0, with an `Error:` line in its description.
    error = re.search(r"(?m)^(?:ERROR|Error):\s*(.+)$", output)
    if answer.returncode != 0 or error is not None:
        reason = error.group(1).strip() if error else output.strip().splitlines()[-1:] or ["no answer"]
        return [f"{name} is not usable (`{' '.join(argv)}`: {''.join(reason)}): {_builder_fix(builder)}"]
    listed = _builder_platforms(output)
    missing = [p for p in platforms if p not in listed and p not in set(skip)]
    if listed and missing:
        return [
            f"{name} cannot build {', '.join(missing)} (it offers {', '.join(sorted(listed))}): "
            "register QEMU for that architecture on the builder's machine (`apt-get install qemu-user-static "
            "binfmt-support`, or `docker run --privileged --rm tonistiigi/binfmt --install all`) and restart "
            "the builder, or add a node of that architecture (`docker buildx create --append`)"
        ]
    return []


def _builder_fix(builder: Optional[str]) -> str:
    return (
        "with a Docker daemon, `docker buildx create --name multiarch --driver docker-container "
        "--driver-opt network=host --bootstrap` and then --builder multiarch; without one, from an armada-flyte "
        f'checkout, `{TOOLS_SCRIPT}` then `eval "$({BUILDER_SCRIPT} start)"` runs BuildKit on this host and '
        "makes the builder armada-flyte (then --builder armada-flyte, or BUILDX_BUILDER=armada-flyte); "
        "or give --builder NAME of a builder of your own. "
        "`docker buildx inspect --bootstrap NAME` tells whether a builder is usable"
        + (f" (asked: {builder})" if builder else "")
    )


def _builder_platforms(description: str) -> set[str]:
    """Every platform the builder's nodes list (`Platforms: linux/amd64, linux/arm64*, ...`)."""
    found: set[str] = set()
    for line in re.findall(r"(?m)^Platforms:\s*(.*)$", description):
        found.update(part.strip().rstrip("*") for part in line.split(",") if part.strip())
    return found


def _answers(runner: Runner, argv: list[str]) -> bool:
    try:
        return runner(argv, capture_output=True, text=True, check=False).returncode == 0
    except OSError:
        return False


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
