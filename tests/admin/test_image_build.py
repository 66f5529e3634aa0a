"""The runtime image's files, `runtime_image()`, the build preflight and plan, and (with the image parts of
scripts/prepare-image-parts.sh) a real two-platform build."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess

import pytest

from armada_flyte.admin.cli import main
from armada_flyte.admin.image_build import (
    DEFAULT_PYTHON_VERSION,
    WHEEL_EPOCH,
    BuildRequest,
    BuildToolMissing,
    pip_cert_from_environment,
    run_build,
)
from armada_flyte.admin.image_preflight import preflight_problems
from armada_flyte.architecture import Architecture, host_architecture_name
from armada_flyte.errors import InvalidConfig
from armada_flyte.registry.client import image_platforms
from armada_flyte.task.runtime_image import RUNTIME_PLATFORMS, runtime_dockerfile, runtime_image, runtime_image_dir

pytestmark = pytest.mark.usefixtures("docker_config")

HOST_DOCKER_CONFIG = os.environ.get("DOCKER_CONFIG")
"""Where buildx keeps its builders here (before the docker_config fixture empties DOCKER_CONFIG)."""

DOCKERFILE = runtime_dockerfile().read_text()
BAKE_FILE = (runtime_image_dir() / "docker-bake.hcl").read_text()
NATIVE_PLATFORMS = (f"linux/{host_architecture_name()}",)
"""This machine's own platform: a build plan for it needs no emulator, so the test holds on any machine."""


def dockerfile_arg(name: str) -> str:
    found = re.findall(rf"(?m)^ARG {name}=(\S+)$", DOCKERFILE)
    assert found, f"the Dockerfile has no default for ARG {name}"
    assert len(set(found)) == 1, f"ARG {name} has different defaults: {found}"
    return found[0]


def bake_default(variable: str) -> str:
    match = re.search(rf'variable "{variable}" {{\s*default = "([^"]*)"', BAKE_FILE)
    assert match, f"the bake file has no variable {variable}"
    return match.group(1)


# --- the files --------------------------------------------------------------------------


@pytest.mark.pure
def test_the_package_finds_the_repository_images_folder():
    assert runtime_image_dir().name == "images"
    assert runtime_dockerfile().is_file()


@pytest.mark.pure
def test_the_dockerfile_pins_flyte_to_the_installed_version():
    assert dockerfile_arg("FLYTE_VERSION") == importlib.metadata.version("flyte")


@pytest.mark.pure
def test_the_dockerfile_pins_armada_flyte_to_this_version():
    assert dockerfile_arg("ARMADA_FLYTE_VERSION") == importlib.metadata.version("armada-flyte")


@pytest.mark.pure
def test_the_dockerfile_installs_from_the_index_unless_told_otherwise():
    """Flyte's builder passes no build args and uses the Dockerfile's folder as the context."""
    assert dockerfile_arg("ARMADA_FLYTE_FROM") == "index"
    assert re.search(r"(?m)^FROM install-\$\{ARMADA_FLYTE_FROM\}", DOCKERFILE)


@pytest.mark.pure
def test_the_dockerfile_runs_as_a_numeric_non_root_user_with_a0_on_path():
    users = re.findall(r"(?m)^USER (\S+)$", DOCKERFILE)
    assert users and all(u.split(":")[0] != "0" for u in users)
    assert users[-1] == "${RUNTIME_UID}:${RUNTIME_UID}" and dockerfile_arg("RUNTIME_UID") != "0"
    assert "command -v a0" in DOCKERFILE


@pytest.mark.pure
def test_the_python_base_is_a_build_argument_with_the_cli_default():
    assert dockerfile_arg("PYTHON_VERSION") == DEFAULT_PYTHON_VERSION
    assert re.search(r"(?m)^FROM python:\$\{PYTHON_VERSION\}", DOCKERFILE)


@pytest.mark.pure
def test_the_bake_file_builds_both_platforms_by_default():
    assert re.search(r"(?m)^group \"default\" \{\s*targets = \[\"runtime\"\]", BAKE_FILE)
    platforms = re.search(r"platforms\s*=\s*\[([^\]]*)\]", BAKE_FILE).group(1)
    assert tuple(re.findall(r'"([^"]+)"', platforms)) == RUNTIME_PLATFORMS


@pytest.mark.pure
def test_the_bake_file_agrees_with_the_cli_on_python_and_source():
    assert bake_default("PYTHON_VERSION") == DEFAULT_PYTHON_VERSION
    assert '"armada-flyte-wheel" = "dist"' in BAKE_FILE
    assert 'ARMADA_FLYTE_FROM = "wheel"' in BAKE_FILE
    for variable in ("REGISTRY", "IMAGE", "TAG"):
        bake_default(variable)


# --- runtime_image() --------------------------------------------------------------------


@pytest.mark.pure
def test_runtime_image_is_a_flyte_image_from_the_dockerfile_for_both_platforms():
    import flyte

    image = runtime_image("127.0.0.1:5000", "armada-flyte-runtime")
    assert isinstance(image, flyte.Image)
    assert image.platform == ("linux/amd64", "linux/arm64")
    assert image.dockerfile == runtime_dockerfile()
    assert image.uri.startswith("127.0.0.1:5000/armada-flyte-runtime:")


@pytest.mark.pure
def test_the_package_level_runtime_image_stays_callable_once_its_module_is_loaded():
    import armada_flyte

    assert armada_flyte.runtime_image("127.0.0.1:5000").platform == RUNTIME_PLATFORMS
    assert callable(armada_flyte.runtime_image)


@pytest.mark.pure
def test_runtime_image_takes_the_name():
    assert runtime_image("ghcr.io/org", "tasks").uri.startswith("ghcr.io/org/tasks:")


# --- preflight --------------------------------------------------------------------------


BUILDER_DESCRIPTION = """Name:          multiarch
Driver:        docker-container

Nodes:
Name:             multiarch0
Status:           running
BuildKit version: v0.34.2
Platforms:        {platforms}
"""
UNREACHABLE_DEFAULT = """Name:   default
Driver:
Error:  failed to connect to the docker API at unix:///var/run/docker.sock

Nodes:
"""


class FakeDocker:
    """Answers `docker buildx version` and `docker buildx inspect` as told, so the preflight can be tested on any
    machine; records every call with the environment it was given."""

    def __init__(
        self, has_buildx: bool, inspect: str = BUILDER_DESCRIPTION.format(platforms="linux/amd64, linux/arm64")
    ):
        self.has_buildx = has_buildx
        self.inspect = inspect
        self.calls: list[list[str]] = []
        self.envs: list[object] = []

    def __call__(self, argv, **kwargs):
        self.calls.append(list(argv))
        self.envs.append(kwargs.get("env"))
        if argv[:2] == ["docker", "buildx"] and not self.has_buildx:
            return subprocess.CompletedProcess(argv, 1, stdout="", stderr="unknown command buildx")
        stdout = self.inspect if argv[:3] == ["docker", "buildx", "inspect"] else ""
        return subprocess.CompletedProcess(argv, 0, stdout=stdout, stderr="")


@pytest.fixture
def binfmt(tmp_path):
    folder = tmp_path / "binfmt_misc"
    folder.mkdir()
    return folder


@pytest.fixture
def docker_on_path(tmp_path, monkeypatch):
    """A `docker` on PATH (never run: the fake runner answers), for machines without the CLI."""
    folder = tmp_path / "bin"
    folder.mkdir()
    program = folder / "docker"
    program.write_text("#!/bin/sh\nexit 1\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.pure
def test_preflight_passes_with_buildx_and_emulation(binfmt, docker_on_path):
    (binfmt / "qemu-aarch64").write_text("enabled\ninterpreter /usr/bin/qemu-aarch64-static\n")
    assert (
        preflight_problems(RUNTIME_PLATFORMS, binfmt_dir=binfmt, host=Architecture.amd64, runner=FakeDocker(True)) == []
    )


@pytest.mark.pure
def test_preflight_says_how_to_add_buildx(binfmt, docker_on_path):
    problems = preflight_problems(["linux/amd64"], binfmt_dir=binfmt, host=Architecture.amd64, runner=FakeDocker(False))
    assert len(problems) == 1
    assert "docker buildx is missing" in problems[0] and "docker-buildx-plugin" in problems[0]


@pytest.mark.pure
def test_preflight_says_how_to_add_qemu_for_the_foreign_architecture(binfmt, docker_on_path):
    problems = preflight_problems(
        RUNTIME_PLATFORMS, binfmt_dir=binfmt, host=Architecture.amd64, runner=FakeDocker(True)
    )
    assert len(problems) == 1
    assert "linux/arm64" in problems[0] and "qemu-aarch64" in problems[0]
    assert "tonistiigi/binfmt" in problems[0] and "qemu-user-static" in problems[0]


@pytest.mark.pure
def test_preflight_on_arm64_needs_x86_64_emulation(binfmt, docker_on_path):
    problems = preflight_problems(
        RUNTIME_PLATFORMS, binfmt_dir=binfmt, host=Architecture.arm64, runner=FakeDocker(True)
    )
    assert len(problems) == 1 and "qemu-x86_64" in problems[0]


@pytest.mark.pure
def test_preflight_ignores_a_disabled_emulator(binfmt, docker_on_path):
    (binfmt / "qemu-aarch64").write_text("disabled\n")
    problems = preflight_problems(
        RUNTIME_PLATFORMS, binfmt_dir=binfmt, host=Architecture.amd64, runner=FakeDocker(True)
    )
    assert len(problems) == 1


@pytest.mark.pure
def test_preflight_needs_no_emulation_for_the_native_platform(binfmt, docker_on_path):
    assert (
        preflight_problems(["linux/amd64"], binfmt_dir=binfmt, host=Architecture.amd64, runner=FakeDocker(True)) == []
    )


@pytest.mark.pure
def test_preflight_skips_emulation_when_asked(binfmt, docker_on_path):
    assert (
        preflight_problems(
            RUNTIME_PLATFORMS,
            check_emulation=False,
            binfmt_dir=binfmt,
            host=Architecture.amd64,
            runner=FakeDocker(True),
        )
        == []
    )


@pytest.mark.pure
def test_preflight_without_a_docker_cli(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    problems = preflight_problems(RUNTIME_PLATFORMS, runner=FakeDocker(True))
    assert problems and "docker CLI is not on PATH" in problems[0]


@pytest.mark.pure
def test_a_build_with_missing_tools_runs_nothing_and_lists_every_fix(docker_on_path):
    runner = FakeDocker(False)
    request = BuildRequest(tags=("127.0.0.1:5000/rt:1",), platforms=("linux/amd64",))
    with pytest.raises(BuildToolMissing) as caught:
        run_build(request, runner=runner)
    assert runner.calls == [["docker", "buildx", "version"]]
    assert "cannot build the runtime image here" in str(caught.value)


@pytest.mark.pure
def test_a_build_runs_the_printed_command(docker_on_path, capsys):
    runner = FakeDocker(True)
    request = BuildRequest(tags=("127.0.0.1:5000/rt:1",), platforms=("linux/amd64",), push=True)
    assert run_build(request, runner=runner) == 0
    assert runner.calls[-1] == request.command()
    assert f"+ {request.printable()}" in capsys.readouterr().err


@pytest.mark.pure
def test_preflight_asks_the_builder_to_start(binfmt, docker_on_path):
    runner = FakeDocker(True)
    preflight_problems(["linux/amd64"], builder="multiarch", binfmt_dir=binfmt, host=Architecture.amd64, runner=runner)
    assert ["docker", "buildx", "inspect", "--bootstrap", "multiarch"] in runner.calls


@pytest.mark.pure
def test_preflight_says_how_to_get_a_builder_when_the_default_one_has_no_daemon(binfmt, docker_on_path):
    runner = FakeDocker(True, inspect=UNREACHABLE_DEFAULT)
    (problem,) = preflight_problems(["linux/amd64"], binfmt_dir=binfmt, host=Architecture.amd64, runner=runner)
    assert "the current buildx builder is not usable" in problem and "failed to connect to the docker API" in problem
    assert "scripts/build-image-tools.sh" in problem and "scripts/image-builder.sh start" in problem
    assert "docker buildx inspect --bootstrap" in problem and "--driver docker-container" in problem


@pytest.mark.pure
def test_preflight_names_the_platform_a_builder_lacks(binfmt, docker_on_path):
    runner = FakeDocker(True, inspect=BUILDER_DESCRIPTION.format(platforms="linux/amd64, linux/386"))
    (problem,) = preflight_problems(RUNTIME_PLATFORMS, builder="multiarch", check_emulation=False, runner=runner)
    assert "buildx builder multiarch cannot build linux/arm64" in problem
    assert "it offers linux/386, linux/amd64" in problem and "qemu-user-static" in problem


@pytest.mark.pure
def test_preflight_reports_missing_emulation_once(binfmt, docker_on_path):
    runner = FakeDocker(True, inspect=BUILDER_DESCRIPTION.format(platforms="linux/amd64"))
    problems = preflight_problems(RUNTIME_PLATFORMS, binfmt_dir=binfmt, host=Architecture.amd64, runner=runner)
    assert len(problems) == 1 and "qemu-aarch64" in problems[0]


@pytest.mark.pure
def test_from_a_checkout_the_wheel_is_built_first_then_installed(docker_on_path, tmp_path, capsys):
    runner = FakeDocker(True)
    checkout, wheels = tmp_path / "checkout", tmp_path / "wheels"
    request = BuildRequest(
        tags=("127.0.0.1:5000/rt:1",), platforms=NATIVE_PLATFORMS, push=True, source=checkout, wheel_dir=wheels
    )
    assert run_build(request, runner=runner) == 0
    wheel_call, build_call = runner.calls[-2:]
    assert wheel_call[1:] == ["-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(wheels), str(checkout)]
    assert runner.envs[-2]["SOURCE_DATE_EPOCH"] == WHEEL_EPOCH  # same checkout, same wheel bytes, cache holds
    assert build_call == request.command()
    assert "ARMADA_FLYTE_FROM=wheel" in build_call and f"armada-flyte-wheel={wheels}" in build_call
    assert wheels.is_dir()
    err = capsys.readouterr().err
    assert all(f"+ {line}" in err for line in request.printable().splitlines())


@pytest.mark.pure
def test_a_failed_wheel_stops_the_build(docker_on_path, tmp_path):
    class NoWheel(FakeDocker):
        def __call__(self, argv, **kwargs):
            if "wheel" in argv:
                self.calls.append(list(argv))
                return subprocess.CompletedProcess(argv, 2, stdout="", stderr="")
            return super().__call__(argv, **kwargs)

    runner = NoWheel(True)
    request = BuildRequest(
        tags=("127.0.0.1:5000/rt:1",), platforms=NATIVE_PLATFORMS, source=tmp_path, wheel_dir=tmp_path / "w"
    )
    assert run_build(request, runner=runner) == 2
    assert "wheel" in runner.calls[-1] and not any(call[:3] == ["docker", "buildx", "build"] for call in runner.calls)


@pytest.mark.pure
def test_the_base_image_and_the_pip_cert_become_a_build_arg_and_a_secret(tmp_path):
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    argv = BuildRequest(
        tags=("127.0.0.1:5000/rt:1",), base_image="127.0.0.1:5000/base:bookworm", pip_cert=bundle
    ).command()
    assert "BASE_IMAGE=127.0.0.1:5000/base:bookworm" in argv
    assert argv[argv.index("--secret") + 1] == f"id=pip-cert,src={bundle}"


@pytest.mark.pure
def test_without_a_base_image_the_dockerfile_default_is_used():
    argv = BuildRequest(tags=("127.0.0.1:5000/rt:1",)).command()
    assert not any(word.startswith("BASE_IMAGE=") for word in argv) and "--secret" not in argv


@pytest.mark.pure
def test_a_missing_pip_cert_is_rejected_naming_the_flag(tmp_path):
    with pytest.raises(InvalidConfig) as caught:
        BuildRequest(tags=("127.0.0.1:5000/rt:1",), pip_cert=tmp_path / "nope.pem")
    assert caught.value.field == "--pip-cert"


@pytest.mark.pure
def test_a_bad_base_image_is_rejected_naming_the_flag():
    with pytest.raises(InvalidConfig) as caught:
        BuildRequest(tags=("127.0.0.1:5000/rt:1",), base_image="Not A Reference")
    assert caught.value.field == "--base-image" and "lower-case" in str(caught.value)


@pytest.mark.pure
def test_the_pip_cert_comes_from_what_pip_trusts_here(tmp_path):
    bundle = tmp_path / "ca.pem"
    bundle.write_text("x")
    assert pip_cert_from_environment({"PIP_CERT": str(bundle), "SSL_CERT_FILE": "/nope"}) == bundle
    assert pip_cert_from_environment({"PIP_CERT": str(tmp_path / "gone"), "SSL_CERT_FILE": str(bundle)}) == bundle
    assert pip_cert_from_environment({}) is None


@pytest.mark.pure
def test_a_multi_platform_build_without_push_says_where_the_result_stays(docker_on_path, capsys):
    request = BuildRequest(tags=("127.0.0.1:5000/rt:1",), builder="native-nodes")
    run_build(request, runner=FakeDocker(True))
    assert "add --push" in capsys.readouterr().err


@pytest.mark.pure
def test_without_a_checkout_armada_flyte_comes_from_the_index():
    argv = BuildRequest(tags=("127.0.0.1:5000/rt:1",), source=None).command()
    assert "ARMADA_FLYTE_FROM=index" in argv and "--build-context" not in argv


# --- a real build -----------------------------------------------------------------------


@pytest.mark.docker
def test_buildx_builds_the_runtime_image_for_both_platforms_into_a_registry(registry, monkeypatch, missing_part):
    """`armada-flyte image build --push` for real: the project's BuildKit builder (buildkitd on this host, QEMU for
    the foreign platform) and its Debian base image, both from scripts/prepare-image-parts.sh, which names them
    in ARMADA_FLYTE_TEST_BUILDER and ARMADA_FLYTE_TEST_BASE_IMAGE. With the image parts prepared, every step is
    in BuildKit's cache and only the push to this test's registry is new."""
    builder = os.environ.get("ARMADA_FLYTE_TEST_BUILDER")
    base = os.environ.get("ARMADA_FLYTE_TEST_BASE_IMAGE")
    if not builder or not base:
        missing_part(
            "no image builder: ARMADA_FLYTE_TEST_BUILDER / ARMADA_FLYTE_TEST_BASE_IMAGE are unset "
            '(scripts/test.sh sets them under CI; or eval "$(scripts/prepare-image-parts.sh start)")'
        )
    if HOST_DOCKER_CONFIG is None:
        monkeypatch.delenv("DOCKER_CONFIG")
    else:
        monkeypatch.setenv("DOCKER_CONFIG", HOST_DOCKER_CONFIG)
    problems = preflight_problems(RUNTIME_PLATFORMS, builder=builder)
    assert problems == [], problems
    tag = f"{registry.host}/armada-flyte-runtime:test"
    argv = ["image", "build", "--tag", tag, "--push", "--progress", "plain", "--builder", builder, "--base-image", base]
    assert main(argv) == 0
    result = image_platforms(tag)
    assert result.is_index
    assert {p.architecture for p in result.platforms} == {"amd64", "arm64"}
