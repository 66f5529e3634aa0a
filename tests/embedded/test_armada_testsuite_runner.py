"""scripts/armada-testsuite.sh waits for the server it starts: a slow start on a busy machine still runs
the cases, and a server that dies or never gets ready fails the runner with the reason and its log."""

from __future__ import annotations

import os
import pathlib
import stat

from support.armada_tools import CLI, run_testsuite_runner

CHEAP_CASE = "basic/submit_1x1"


def _server_command(folder: pathlib.Path, body: str) -> str:
    """A stand-in for ARMADA_FLYTE_CMD: a shell script of `body`, run with dev's arguments."""
    script = folder / "armada-flyte"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def _runner_env(tmp_path: pathlib.Path, server_command: str, **extra: str) -> dict[str, str]:
    env = {**os.environ, "OUT_DIR": str(tmp_path / "out"), "ARMADA_FLYTE_CMD": server_command, **extra}
    env.pop("ARMADA_URL", None)
    return env


def test_a_server_whose_log_appears_late_still_runs_a_case(armada_tools, tmp_path):
    """As on a loaded machine: the runner looks for server.log before the server has made it."""
    late_start = _server_command(
        tmp_path,
        f'rm -f "$OUT_DIR/server.log"\nsleep 3\nexec {CLI} "$@" >"$OUT_DIR/server.log" 2>&1',
    )
    run = run_testsuite_runner([CHEAP_CASE], _runner_env(tmp_path, late_start), timeout=280)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines()[-1] == "1 passed, 0 failed, 0 skipped", run.stderr[-3000:]


def test_a_server_that_exits_before_it_is_ready_fails_the_runner_with_its_log(armada_tools, tmp_path):
    dying = _server_command(tmp_path, "echo 'cluster file: no node groups'\nexit 3")
    run = run_testsuite_runner([CHEAP_CASE], _runner_env(tmp_path, dying), timeout=120)
    assert run.returncode == 1
    assert "the embedded server exited before printing its ready line" in run.stderr
    assert "cluster file: no node groups" in run.stderr


def test_a_server_that_never_gets_ready_fails_the_runner_after_the_start_timeout(armada_tools, tmp_path):
    stuck = _server_command(tmp_path, "echo 'loading the cluster file'\nexec sleep 600")
    env = _runner_env(tmp_path, stuck, ARMADA_TESTSUITE_START_TIMEOUT="2")
    run = run_testsuite_runner([CHEAP_CASE], env, timeout=120)
    assert run.returncode == 1
    assert "did not print its ready line" in run.stderr and "within 2 s" in run.stderr
    assert "loading the cluster file" in run.stderr
