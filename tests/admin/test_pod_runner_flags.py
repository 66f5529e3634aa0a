"""How pods run is chosen by `--pod-runner process|docker`; `--executor`, the old spelling, still works."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

from armada_flyte.admin.cli import build_parser

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "multiarch.py"


@pytest.mark.pure
@pytest.mark.parametrize("flag", ["--pod-runner", "--executor"])
def test_dev_takes_the_pod_runner_under_its_name_and_the_old_one(flag):
    assert build_parser().parse_args(["dev", flag, "docker"]).pod_runner == "docker"
    assert build_parser().parse_args(["dev"]).pod_runner == "process"


@pytest.mark.pure
def test_dev_help_names_the_pod_runner():
    dev = build_parser()._subparsers._group_actions[0].choices["dev"]
    assert "--pod-runner" in dev.format_help()


@pytest.mark.pure
def test_dev_refuses_a_pod_runner_it_does_not_have(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["dev", "--pod-runner", "kubelet"])
    assert "process" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--pod-runner", "--executor"])
def test_the_example_takes_the_pod_runner_under_its_name_and_the_old_one(flag, monkeypatch, capsys):
    """Not pure: importing the example imports Flyte, which starts a process."""
    spec = importlib.util.spec_from_file_location("multiarch_example", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, example)  # its dataclasses look their module up
    spec.loader.exec_module(example)
    monkeypatch.delenv("ARMADA_FLYTE_RUNTIME_IMAGE", raising=False)
    with pytest.raises(SystemExit):  # docker without a runtime image: refused before anything starts
        example.main([flag, "docker"])
    assert "--pod-runner docker runs the tasks in ARMADA_FLYTE_RUNTIME_IMAGE" in capsys.readouterr().err
