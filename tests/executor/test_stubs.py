"""Without its generated stubs the executor says which script makes them."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

CLI = pathlib.Path(sys.executable).parent / "armada-flyte"


def test_the_command_names_the_build_script_when_the_stubs_are_missing(tmp_path):
    env = {**os.environ, "ARMADA_FLYTE_EXECUTOR_STUBS": str(tmp_path / "none")}
    result = subprocess.run(
        [str(CLI), "executor", "--scheduler", "127.0.0.1:1"], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "scripts/build-executor-stubs.sh" in result.stderr
    assert str(tmp_path / "none") in result.stderr
