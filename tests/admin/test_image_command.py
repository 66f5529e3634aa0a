"""`armada-flyte image inspect` and `armada-flyte image build`, through the real CLI entry point."""

from __future__ import annotations

import json
import shlex

import pytest

from armada_flyte.admin.cli import main
from armada_flyte.admin.image_build import package_checkout
from armada_flyte.task.runtime_image import runtime_dockerfile, runtime_image_dir

from support.registry_process import PASSWORD, USER

pytestmark = pytest.mark.usefixtures("docker_config")

TAG = "127.0.0.1:5000/armada-flyte-runtime:test"


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- inspect ----------------------------------------------------------------------------


@pytest.mark.registry
def test_inspect_prints_one_platform_per_line(images, capsys):
    assert cli(capsys, "image", "inspect", images.multi) == (0, "linux/amd64\nlinux/arm64/v8\n", "")


@pytest.mark.registry
def test_inspect_json(images, capsys):
    code, out, _ = cli(capsys, "image", "inspect", images.amd64_only, "--json")
    assert code == 0
    document = json.loads(out)
    assert document["platforms"] == ["linux/amd64"]
    assert document["reference"] == images.amd64_only
    assert document["media_type"] == "application/vnd.oci.image.manifest.v1+json"
    assert document["digest"].startswith("sha256:")


@pytest.mark.registry
def test_inspect_with_insecure_flag(images, capsys):
    assert cli(capsys, "image", "inspect", "--insecure", images.arm64_only)[:2] == (0, "linux/arm64/v8\n")


@pytest.mark.registry
def test_inspect_a_missing_tag_fails_with_the_reason(images, capsys):
    code, out, err = cli(capsys, "image", "inspect", images.missing_tag)
    assert code == 1 and out == ""
    assert "was not found" in err and images.missing_tag in err


@pytest.mark.registry
def test_inspect_an_unreachable_registry_fails_with_what_to_check(unreachable_host, capsys):
    code, _, err = cli(capsys, "image", "inspect", f"{unreachable_host}/app:1")
    assert code == 1
    assert "could not be reached" in err


@pytest.mark.registry
def test_inspect_with_a_username_reads_the_password_from_the_environment(basic_registry, capsys, monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_REGISTRY_PASSWORD", PASSWORD)
    code, out, _ = cli(capsys, "image", "inspect", basic_registry.multi, "--username", USER)
    assert (code, out) == (0, "linux/amd64\nlinux/arm64/v8\n")


@pytest.mark.registry
def test_inspect_with_a_username_reads_the_password_from_stdin(basic_registry, capsys, monkeypatch):
    import io

    monkeypatch.delenv("ARMADA_FLYTE_REGISTRY_PASSWORD", raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
    assert cli(capsys, "image", "inspect", basic_registry.amd64_only, "--username", USER)[:2] == (0, "linux/amd64\n")


@pytest.mark.registry
def test_inspect_without_credentials_says_to_log_in(basic_registry, capsys):
    code, _, err = cli(capsys, "image", "inspect", basic_registry.multi)
    assert code == 1 and "docker login" in err


@pytest.mark.docker
def test_inspect_through_the_daemon(images, dockerd, capsys, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", dockerd)
    code, out, err = cli(capsys, "image", "inspect", "--daemon", images.multi)
    assert (code, out) == (0, "linux/amd64\nlinux/arm64/v8\n"), err


@pytest.mark.pure
def test_inspect_rejects_a_malformed_reference(capsys):
    code, _, err = cli(capsys, "image", "inspect", "Not/A/Reference")
    assert code == 1 and "is not an image reference" in err


# --- build --print ----------------------------------------------------------------------


def printed(capsys, *flags: str) -> list[str]:
    """The printed `docker buildx build` command (the last line; a wheel build may come first)."""
    code, out, _ = cli(capsys, "image", "build", "--print", *flags)
    assert code == 0
    return shlex.split(out.splitlines()[-1])


def flag_values(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, word in enumerate(argv[:-1]) if word == flag]


@pytest.mark.pure
def test_print_defaults_to_both_platforms_and_keeps_the_result_in_the_build_cache(capsys):
    argv = printed(capsys, "--tag", TAG)
    assert argv[:3] == ["docker", "buildx", "build"]
    assert flag_values(argv, "--platform") == ["linux/amd64,linux/arm64"]
    assert flag_values(argv, "--tag") == [TAG]
    assert flag_values(argv, "--file") == [str(runtime_dockerfile())]
    assert "PYTHON_VERSION=3.11" in flag_values(argv, "--build-arg")
    assert "--push" not in argv and "--load" not in argv
    assert argv[-1] == str(runtime_image_dir())


@pytest.mark.pure
def test_print_with_push(capsys):
    argv = printed(capsys, "--tag", TAG, "--push")
    assert "--push" in argv and "--load" not in argv


@pytest.mark.pure
@pytest.mark.parametrize(
    ("given", "platforms"),
    [
        ("linux/amd64", "linux/amd64"),
        ("linux/arm64", "linux/arm64"),
        ("arm64,amd64", "linux/arm64,linux/amd64"),
        ("linux/amd64,linux/amd64", "linux/amd64"),
        ("aarch64", "linux/arm64"),
    ],
)
def test_print_with_a_platform_subset(capsys, given, platforms):
    assert flag_values(printed(capsys, "--tag", TAG, "--platform", given), "--platform") == [platforms]


@pytest.mark.pure
def test_print_a_single_platform_without_push_loads_into_docker(capsys):
    assert "--load" in printed(capsys, "--tag", TAG, "--platform", "linux/arm64")


@pytest.mark.pure
def test_print_a_single_platform_with_push_pushes(capsys):
    argv = printed(capsys, "--tag", TAG, "--platform", "linux/arm64", "--push")
    assert "--push" in argv and "--load" not in argv


@pytest.mark.pure
@pytest.mark.parametrize("version", ["3.10", "3.12", "3.13"])
def test_print_with_a_python_version(capsys, version):
    argv = printed(capsys, "--tag", TAG, "--python", version)
    assert f"PYTHON_VERSION={version}" in flag_values(argv, "--build-arg")


@pytest.mark.pure
def test_print_with_several_tags(capsys):
    other = "ghcr.io/org/armada-flyte-runtime:0.1.0"
    assert flag_values(printed(capsys, "--tag", TAG, "--tag", other), "--tag") == [TAG, other]


@pytest.mark.pure
def test_print_with_a_builder_and_plain_progress(capsys):
    argv = printed(capsys, "--tag", TAG, "--builder", "multiarch", "--progress", "plain")
    assert flag_values(argv, "--builder") == ["multiarch"]
    assert flag_values(argv, "--progress") == ["plain"]


@pytest.mark.pure
def test_print_every_flag_at_once(capsys):
    argv = printed(capsys, "--tag", TAG, "--platform", "linux/amd64,linux/arm64", "--push", "--python", "3.12")
    assert flag_values(argv, "--platform") == ["linux/amd64,linux/arm64"]
    assert "--push" in argv
    assert "PYTHON_VERSION=3.12" in flag_values(argv, "--build-arg")


@pytest.mark.pure
def test_print_from_a_checkout_builds_its_wheel_first_and_installs_that(capsys, tmp_path, monkeypatch):
    checkout = package_checkout()
    assert checkout is not None, "the tests run from an editable install of the checkout"
    monkeypatch.setenv("ARMADA_FLYTE_CACHE", str(tmp_path))
    code, out, _ = cli(capsys, "image", "build", "--print", "--tag", TAG)
    wheel_line, build_line = out.splitlines()
    wheel = shlex.split(wheel_line)
    assert wheel[0] == "SOURCE_DATE_EPOCH=315532800" and wheel[2:5] == ["-m", "pip", "wheel"]
    assert wheel[-1] == str(checkout) and flag_values(wheel, "--wheel-dir") == [str(tmp_path / "runtime-wheel")]
    argv = shlex.split(build_line)
    assert "ARMADA_FLYTE_FROM=wheel" in flag_values(argv, "--build-arg")
    assert flag_values(argv, "--build-context") == [f"armada-flyte-wheel={tmp_path / 'runtime-wheel'}"]
    assert not (tmp_path / "runtime-wheel").exists()  # --print runs nothing


@pytest.mark.pure
def test_print_with_a_base_image_and_a_pip_cert(capsys, tmp_path):
    bundle = tmp_path / "ca.pem"
    bundle.write_text("x")
    argv = printed(capsys, "--tag", TAG, "--base-image", "127.0.0.1:5055/base:bookworm", "--pip-cert", str(bundle))
    assert "BASE_IMAGE=127.0.0.1:5055/base:bookworm" in flag_values(argv, "--build-arg")
    assert flag_values(argv, "--secret") == [f"id=pip-cert,src={bundle}"]


@pytest.mark.pure
def test_print_takes_the_pip_cert_from_the_environment_unless_told_not_to(capsys, tmp_path, monkeypatch):
    bundle = tmp_path / "ca.pem"
    bundle.write_text("x")
    monkeypatch.setenv("PIP_CERT", str(bundle))
    assert flag_values(printed(capsys, "--tag", TAG), "--secret") == [f"id=pip-cert,src={bundle}"]
    assert flag_values(printed(capsys, "--tag", TAG, "--no-pip-cert"), "--secret") == []


@pytest.mark.pure
@pytest.mark.parametrize(
    ("flags", "complaint"),
    [
        (("--platform", "linux/s390x"), "--platform"),
        (("--platform", ","), "--platform"),
        (("--python", "2.7"), "--python"),
        (("--python", "three"), "--python"),
        (("--pip-cert", "/no/such/bundle.pem"), "--pip-cert"),
        (("--base-image", "Not A Reference"), "--base-image"),
    ],
)
def test_build_rejects_bad_input_naming_the_flag(capsys, flags, complaint):
    code, out, err = cli(capsys, "image", "build", "--print", "--tag", TAG, *flags)
    assert code == 1 and out == ""
    assert complaint in err


@pytest.mark.pure
def test_build_rejects_a_bad_tag(capsys):
    code, _, err = cli(capsys, "image", "build", "--print", "--tag", "Bad Tag")
    assert code == 1 and "is not an image reference" in err


@pytest.mark.pure
def test_build_needs_a_tag(capsys):
    with pytest.raises(SystemExit):
        main(["image", "build", "--print"])
    assert "--tag" in capsys.readouterr().err
