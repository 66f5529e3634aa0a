"""`armada-flyte doctor --runtime-image REF` reads the image's platforms from a real registry."""

from __future__ import annotations

import json

import pytest

from armada_flyte.admin.cli import main

pytestmark = pytest.mark.usefixtures("docker_config")


def doctor(capsys, *args: str) -> tuple[int, dict]:
    code = main(["doctor", "--preset", "gke", "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def runtime_findings(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["check"] == "runtime-image.platforms"]


def test_an_amd64_only_runtime_image_is_a_problem_for_the_arm64_group(images, capsys):
    code, report = doctor(capsys, "--runtime-image", images.amd64_only)
    assert code == 1
    (bad,) = [f for f in runtime_findings(report) if not f["ok"]]
    assert "arm64" in bad["message"] and "exec format error" in bad["message"]
    assert "--platform linux/amd64,linux/arm64" in bad["fix"]


def test_a_multi_arch_runtime_image_passes(images, capsys):
    code, report = doctor(capsys, "--runtime-image", images.multi)
    assert code == 0
    assert [f["ok"] for f in runtime_findings(report)] == [True, True]


def test_a_missing_runtime_image_is_reported_not_raised(images, capsys):
    code, report = doctor(capsys, "--runtime-image", images.missing_tag)
    assert code == 1
    (bad,) = runtime_findings(report)
    assert "can't read the platforms" in bad["message"] and "--runtime-platforms" in bad["fix"]
