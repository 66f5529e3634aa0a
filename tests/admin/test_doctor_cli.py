"""`armada-flyte doctor` end to end on files: table, JSON, exit codes, unreadable inputs."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.pure


def test_good_configs_exit_zero_with_a_table_of_passed_checks(doctor, write_yaml, good_executor, good_scheduler):
    executor = write_yaml("executor.yaml", good_executor)
    scheduler = write_yaml("scheduler.yaml", good_scheduler)
    code, out = doctor(
        "--preset",
        "gke",
        "--executor-config",
        str(executor),
        "--scheduler-config",
        str(scheduler),
        "--runtime-platforms",
        "linux/amd64,linux/arm64",
    )
    assert code == 0
    assert re.match(r"armada-flyte doctor: all \d+ checks passed", out)
    assert "PROBLEM" not in out
    for check in (
        "node-groups.file",
        "node-groups.tolerations",
        "executor.tracked-labels",
        "executor.tolerated-taints",
        "scheduler.indexed-labels",
        "runtime-image.platforms",
    ):
        assert f"ok       {check}" in out


def test_a_problem_exits_one_and_prints_its_fix_under_it(doctor, write_yaml):
    executor = write_yaml("executor.yaml", {"kubernetes": {"toleratedTaints": ["kubernetes.io/arch"]}})
    code, out = doctor("--preset", "generic", "--executor-config", str(executor))
    assert code == 1
    assert out.startswith("armada-flyte doctor: 1 problem in")
    lines = out.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("PROBLEM  executor.tracked-labels"))
    assert any(line.strip().startswith("fix: add kubernetes.io/arch") for line in lines[row:])


def test_json_report_lists_every_finding_and_an_overall_verdict(doctor_json, write_yaml):
    scheduler = write_yaml("scheduler.yaml", {"scheduling": {}})
    code, report = doctor_json("--preset", "embedded", "--scheduler-config", str(scheduler))
    assert code == 1
    assert report["ok"] is False and report["problems"] == 1
    [bad] = [f for f in report["findings"] if not f["ok"]]
    assert bad["check"] == "scheduler.indexed-labels"
    assert "is not indexed" in bad["message"] and bad["fix"]
    assert all(set(f) == {"check", "ok", "message", "fix", "warning"} for f in report["findings"])


@pytest.mark.parametrize(
    "content, says",
    [
        ("architectures: [amd64]\n", "node-groups.yaml is not a valid node-group file"),
        ("architectures: {sparc: {}}\n", "node-groups.yaml is not a valid node-group file"),
        ("architectures: {arm64: {node_selector: {kubernetes.io/arch: amd64}}}\n", "pins kubernetes.io/arch=amd64"),
        (
            "architectures: {arm64: {tolerations: [{key: a, operator: Exists, value: b}]}}\n",
            "operator Exists takes no value",
        ),
        ("architectures: {amd64: {}\n", "not valid YAML"),
    ],
)
def test_invalid_node_group_file_is_a_problem_naming_what_is_wrong(doctor_json, write_yaml, content, says):
    path = write_yaml("node-groups.yaml", content)
    code, report = doctor_json("--node-groups", str(path))
    assert code == 1
    [bad, *tenancy] = report["findings"]
    assert all(f["check"].startswith("tenancy.") for f in tenancy)
    assert bad["check"] == "node-groups.file" and not bad["ok"]
    assert says in bad["message"]
    assert "presets in arch/" in bad["fix"]


def test_missing_node_group_file_is_a_problem(doctor_json, tmp_path):
    code, report = doctor_json("--node-groups", str(tmp_path / "absent.yaml"))
    assert code == 1
    assert "the file does not exist" in report["findings"][0]["message"]


def test_unknown_preset_lists_the_known_ones(doctor_json):
    code, report = doctor_json("--preset", "nope")
    assert code == 1
    assert (
        report["findings"][0]["message"]
        == "no such preset: preset='nope' is invalid: known presets: aks, eks-karpenter, embedded, generic, gke"
    )


def test_without_a_file_or_preset_it_checks_what_the_connector_settings_name(doctor_json, monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_NODE_GROUPS_PRESET", "gke")
    code, report = doctor_json()
    assert code == 0
    assert report["findings"][0]["message"].startswith("preset gke (ARMADA_FLYTE_NODE_GROUPS_PRESET): platform gke")


def test_without_any_setting_it_checks_the_connectors_default_preset(doctor_json):
    code, report = doctor_json()
    assert code == 0
    assert report["findings"][0]["message"].startswith("preset generic (the connector's default)")


def test_node_group_file_from_connector_settings(doctor_json, write_yaml, monkeypatch):
    path = write_yaml("groups.yaml", {"platform": "mine", "architectures": {"arm64": {}}})
    monkeypatch.setenv("ARMADA_FLYTE_NODE_GROUPS_FILE", str(path))
    code, report = doctor_json()
    assert code == 0
    assert report["findings"][0]["message"].startswith(f"{path} (ARMADA_FLYTE_NODE_GROUPS_FILE): platform mine")


def test_invalid_connector_settings_are_a_problem(doctor_json, monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_NODE_GROUPS_PRESET", "gke")
    monkeypatch.setenv("ARMADA_FLYTE_NODE_GROUPS_FILE", "/etc/x.yaml")
    code, report = doctor_json()
    assert code == 1
    assert "set node_groups_file or node_groups_preset, not both" in report["findings"][0]["message"]


@pytest.mark.parametrize(
    "content, says",
    [
        ("kubernetes: [\n", "is not valid YAML"),
        ("- a\n- b\n", "holds list, not a mapping of settings"),
        ("", "holds nothing, not a mapping of settings"),
    ],
)
def test_unreadable_executor_config_is_a_problem(doctor_json, write_yaml, content, says):
    path = write_yaml("executor.yaml", content)
    code, report = doctor_json("--preset", "gke", "--executor-config", str(path))
    assert code == 1
    [bad] = [f for f in report["findings"] if not f["ok"]]
    assert bad["check"] == "executor.config" and says in bad["message"]


def test_missing_scheduler_config_is_a_problem(doctor_json, tmp_path):
    code, report = doctor_json("--preset", "gke", "--scheduler-config", str(tmp_path / "absent.yaml"))
    assert code == 1
    [bad] = [f for f in report["findings"] if not f["ok"]]
    assert bad["check"] == "scheduler.config" and "can't read the scheduler config" in bad["message"]


def test_runtime_platform_spellings_are_normalised(doctor_json):
    code, _ = doctor_json("--preset", "gke", "--runtime-platforms", "x86_64, aarch64")
    assert code == 0


def test_unknown_runtime_platform_is_a_usage_error(doctor, capsys):
    with pytest.raises(SystemExit) as exit_info:
        doctor("--preset", "gke", "--runtime-platforms", "linux/sparc")
    assert exit_info.value.code == 2
    assert "--runtime-platforms='linux/sparc' is invalid" in capsys.readouterr().err


def test_node_groups_and_preset_are_exclusive(doctor):
    with pytest.raises(SystemExit) as exit_info:
        doctor("--preset", "gke", "--node-groups", "x.yaml")
    assert exit_info.value.code == 2


def test_the_eks_preset_is_told_its_node_names_carry_no_pool(doctor_json):
    code, report = doctor_json("--preset", "eks-karpenter")
    assert code == 1
    (found,) = [f for f in report["findings"] if f["check"] == "node-groups.node-names"]
    assert "ip-10-0-1-23.ec2.internal" in found["message"] and 'reads "not known"' in found["message"]
    assert "node_name_prefixes" in found["fix"]


def test_the_shipped_armada_config_examples_are_printed_for_a_pip_install(capsys):
    import yaml

    from armada_flyte.admin.cli import main

    assert main(["doctor", "--example", "executor-config"]) == 0
    config = yaml.safe_load(capsys.readouterr().out)
    assert "kubernetes.io/arch" in config["kubernetes"]["trackedNodeLabels"]
    assert main(["doctor", "--example", "scheduler-config"]) == 0
    assert "indexedNodeLabels" in capsys.readouterr().out


def test_the_fallback_set_in_the_connectors_environment_is_checked_against_the_groups(doctor_json, monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_FALLBACK_ARCHITECTURE", "arm64")
    monkeypatch.setenv("ARMADA_FLYTE_CHECK_IMAGE_PLATFORMS", "true")
    code, report = doctor_json("--preset", "embedded")
    [fallback] = [f for f in report["findings"] if f["check"] == "node-groups.fallback"]
    assert code == 0 and fallback["ok"] and not fallback["warning"]
    assert fallback["message"].startswith("fallback architecture arm64 (the connector setting fallback_architecture")


def test_a_node_group_file_whose_fallback_it_does_not_offer_is_invalid(doctor_json, write_yaml):
    path = write_yaml("groups.yaml", {"fallback_architecture": "arm64", "architectures": {"amd64": {}}})
    code, report = doctor_json("--node-groups", str(path))
    assert code == 1
    first = report["findings"][0]
    assert first["check"] == "node-groups.file" and not first["ok"]
    assert "fallback_architecture='arm64' is invalid" in first["message"] and "offer (amd64)" in first["message"]
