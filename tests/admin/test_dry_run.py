"""`armada-flyte dry-run`: the submission a task would make, printed, nothing submitted."""

import json
import pathlib

import pytest

from armada_flyte.admin.cli import main

PROJECT = pathlib.Path(__file__).parents[1] / "e2e" / "project"


def dry_run(capsys, *args):
    code = main(["dry-run", *args, "--root", str(PROJECT)])
    captured = capsys.readouterr()
    return code, captured


def test_prints_the_request_with_the_presets_placement(capsys):
    code, out = dry_run(capsys, "workflows:summarise", "--preset", "eks-karpenter")
    assert code == 0
    request = json.loads(out.out)
    (item,) = request["jobRequestItems"]
    assert request["queue"] == "flyte"
    assert item["podSpec"]["nodeSelector"] == {"kubernetes.io/arch": "arm64", "karpenter.sh/nodepool": "graviton-pool"}
    assert item["podSpec"]["tolerations"][0]["value"] == "arm64"
    assert item["annotations"]["armada-flyte.io/architecture-source"] == "task"
    container = item["podSpec"]["containers"][0]
    assert container["resources"]["requests"] == container["resources"]["limits"]


def test_a_task_without_architecture_shows_the_platform_default(capsys):
    code, out = dry_run(capsys, "workflows:double", "--preset", "gke")
    item = json.loads(out.out)["jobRequestItems"][0]
    assert item["podSpec"]["nodeSelector"] == {"kubernetes.io/arch": "amd64"}
    assert item["annotations"]["armada-flyte.io/architecture-source"] == "platform"


def test_an_architecture_the_platform_lacks_is_the_clear_error(capsys, tmp_path):
    groups = tmp_path / "amd64-only.yaml"
    groups.write_text("architectures:\n  amd64: {}\n")
    code, out = dry_run(capsys, "workflows:summarise", "--node-groups", str(groups))
    assert code == 1
    assert "not offered" in out.err and "offered: amd64" in out.err


@pytest.mark.pure
def test_a_bad_task_reference_names_the_form(capsys):
    code, out = dry_run(capsys, "workflows", "--preset", "gke")
    assert code == 1 and "module:task" in out.err


def test_an_architecture_preference_prints_the_request_of_each_step(capsys, tmp_path):
    groups = tmp_path / "prefer-arm64.yaml"
    groups.write_text(
        "architectures:\n  amd64: {}\n  arm64: {}\narchitecture_preference: [arm64, amd64]\nspill_after_seconds: 60\n"
    )
    code, out = dry_run(capsys, "workflows:double", "--node-groups", str(groups))
    assert code == 0, out.err
    printed = json.loads(out.out)
    (first,) = printed["create"]["jobRequestItems"]
    assert first["podSpec"]["nodeSelector"] == {"kubernetes.io/arch": "arm64"}
    (later,) = printed["later_steps"]
    assert (later["architecture"], later["node_group"], later["spill_after_seconds"]) == ("amd64", "amd64", 60)
    (item,) = later["request"]["jobRequestItems"]
    assert item["podSpec"]["nodeSelector"] == {"kubernetes.io/arch": "amd64"}
    assert item["clientId"] == first["clientId"] + "-1amd64"
    assert later["request"]["jobSetId"] == printed["create"]["jobSetId"] and "-prefer-" in later["request"]["jobSetId"]


def test_the_connectors_settings_shape_the_request_as_they_shape_create(capsys, monkeypatch):
    monkeypatch.setenv("FLYTE_BLOB_ENDPOINT", "http://blob.example.com:9000")
    monkeypatch.setenv("ARMADA_FLYTE_BLOB_CREDENTIALS_SECRET", "job-blob-keys")
    code, out = dry_run(capsys, "workflows:double", "--preset", "gke")
    assert code == 0, out.err
    env = {e["name"]: e for e in json.loads(out.out)["jobRequestItems"][0]["podSpec"]["containers"][0]["env"]}
    assert env["FLYTE_AWS_ENDPOINT"]["value"] == "http://blob.example.com:9000"
    keys = env["FLYTE_AWS_ACCESS_KEY_ID"]["valueFrom"]["secretKeyRef"]
    assert keys["localObjectReference"] == {"name": "job-blob-keys"}
