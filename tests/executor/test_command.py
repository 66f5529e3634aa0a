"""`armada-flyte executor` at its edges: bad arguments and missing stubs say what to do."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from armada_flyte.admin.cli import main

CLI = pathlib.Path(sys.executable).parent / "armada-flyte"


def test_the_command_names_the_build_script_when_the_stubs_are_missing(tmp_path):
    env = {**os.environ, "ARMADA_FLYTE_EXECUTOR_STUBS": str(tmp_path / "none")}
    result = subprocess.run(
        [str(CLI), "executor", "--scheduler", "127.0.0.1:1"], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "scripts/build-executor-stubs.sh" in result.stderr
    assert str(tmp_path / "none") in result.stderr


def test_stubs_that_do_not_load_are_named_with_the_reason(tmp_path):
    module = tmp_path / "armada_executorapi" / "pkg" / "executorapi" / "executorapi_pb2.py"
    module.parent.mkdir(parents=True)
    module.write_text("raise RuntimeError('built for another protobuf')\n")
    (tmp_path / "armada_executorapi" / "__init__.py").touch()
    env = {**os.environ, "ARMADA_FLYTE_EXECUTOR_STUBS": str(tmp_path)}
    result = subprocess.run(
        [str(CLI), "executor", "--scheduler", "127.0.0.1:1"], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "do not load (RuntimeError: built for another protobuf)" in result.stderr
    assert "scripts/build-executor-stubs.sh" in result.stderr


@pytest.mark.parametrize(
    "arguments, named",
    [
        (["--scheduler", "localhost"], "--scheduler='localhost' is invalid: give the scheduler's executor API"),
        (["--scheduler", "h:1", "--lease-interval", "0"], "--lease-interval=0.0 is invalid"),
        (["--scheduler", "h:1", "--lease-interval", "inf"], "--lease-interval=inf is invalid"),
        (["--scheduler", "h:1", "--lease-interval", "nan"], "--lease-interval=nan is invalid"),
    ],
)
def test_bad_arguments_are_refused_before_anything_starts(capsys, arguments, named):
    assert main(["executor", *arguments]) == 1
    assert named in capsys.readouterr().err
