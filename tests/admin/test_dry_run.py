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


def test_a_preference_shows_the_job_of_each_architecture_it_may_move_to(capsys):
    project = pathlib.Path(__file__).parents[1] / "view" / "project"
    code = main(["dry-run", "outcomes:prefers", "--preset", "gke", "--root", str(project)])
    request = json.loads(capsys.readouterr().out)
    assert code == 0
    assert request["jobRequestItems"][0]["podSpec"]["nodeSelector"]["kubernetes.io/arch"] == "arm64"
    assert "-prefer-" in request["jobSetId"]
    (step,) = request["spillSteps"]
    assert (step["architecture"], step["afterQueuedSeconds"]) == ("amd64", 1.0)
    (item,) = step["jobRequestItems"]
    assert item["podSpec"]["nodeSelector"]["kubernetes.io/arch"] == "amd64"
    assert item["labels"]["armada-flyte.io/architecture"] == "amd64"


def test_a_pinned_task_has_no_spill_steps(capsys):
    code, out = dry_run(capsys, "workflows:summarise", "--preset", "gke")
    assert code == 0 and "spillSteps" not in json.loads(out.out)
