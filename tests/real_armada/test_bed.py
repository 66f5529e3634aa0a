"""scripts/real-armada.sh: clear errors before anything starts, and `down` leaves nothing behind.

The start-and-stop test needs Armada built (minutes the first time), so it runs with `--armada real`.
"""

from __future__ import annotations

import os
import pathlib
import socket
import stat
import subprocess

import pytest

from support.real_armada import SCRIPT, UP_TIMEOUT_SECONDS, parse_assignments, uses_real_armada

# Bases of their own, away from the session's bed (24150) and the executor tests' (25150), all below
# Linux's ephemeral ports (32768 up), which outgoing connections may hold.
LIFECYCLE_BASE = 26150
BUSY_PORT_BASE = 27150


def _without_the_sessions_bed(environ: dict[str, str]) -> dict[str, str]:
    """The environment minus the session bed's state and log folders (scripts/test.sh exports them):
    with them, `up` and `down` at another base would act on the session's bed."""
    return {name: value for name, value in environ.items() if name not in ("REAL_ARMADA_STATE", "REAL_ARMADA_LOGS")}


def run_script(*args: str, base: int, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=UP_TIMEOUT_SECONDS,
        env={**_without_the_sessions_bed(os.environ), "REAL_ARMADA_PORT_BASE": str(base), **env},
    )


def test_an_unknown_command_is_refused_with_the_usage() -> None:
    result = run_script("launch", base=BUSY_PORT_BASE)
    assert result.returncode != 0
    assert "unknown command 'launch': use up, down, status, stop, start or restart" in result.stderr


@pytest.mark.parametrize("verb", ["stop", "start", "restart"])
def test_an_unknown_component_is_refused_with_the_components_names(verb: str) -> None:
    result = run_script(verb, "lookout", base=BUSY_PORT_BASE)
    assert result.returncode != 0
    assert (
        "unknown component 'lookout': use one of postgres redis pulsar scheduleringester eventingester "
        "lookoutingester server scheduler executor"
    ) in result.stderr


def test_starting_a_component_without_a_bed_says_there_is_none() -> None:
    result = run_script("start", "redis", base=BUSY_PORT_BASE)
    assert result.returncode != 0
    assert "no redis was started for REAL_ARMADA_PORT_BASE=27150 (no bed is recorded in " in result.stderr


def test_a_port_in_use_is_named_with_its_component_before_anything_starts() -> None:
    postgres_port = BUSY_PORT_BASE + 5
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", postgres_port))
        holder.listen()
        result = run_script("up", "--no-executor", base=BUSY_PORT_BASE)
    assert result.returncode != 0
    assert f"port {postgres_port} (postgres, REAL_ARMADA_PORT_BASE={BUSY_PORT_BASE} + 5) is already in use" in (
        result.stderr
    )
    assert result.stdout == ""


def test_up_without_an_executor_command_says_how_to_go_on() -> None:
    result = run_script("up", base=BUSY_PORT_BASE, ARMADA_FLYTE_CMD="/bin/false")
    assert result.returncode != 0
    assert "'/bin/false executor' does not run" in result.stderr
    assert "--no-executor" in result.stderr


def group_members(pgid: int) -> list[int]:
    ps = subprocess.run(["ps", "-o", "pid=", "-g", str(pgid)], capture_output=True, text=True)
    return [int(pid) for pid in ps.stdout.split()]


@pytest.mark.timeout(UP_TIMEOUT_SECONDS)
def test_down_stops_every_process_it_started_and_frees_the_ports(request: pytest.FixtureRequest) -> None:
    if not uses_real_armada(request.config):
        pytest.skip("starts a bed of its own: run with --armada real")
    up = run_script("up", "--no-executor", base=LIFECYCLE_BASE)
    bed = parse_assignments(up.stdout)
    assert up.returncode == 0, up.stderr[-4000:]
    state = pathlib.Path(bed["REAL_ARMADA_STATE"])
    try:
        assert bed["ARMADA_URL"] == f"127.0.0.1:{LIFECYCLE_BASE + 1}"
        assert bed["ARMADA_EXECUTOR_API"] == f"127.0.0.1:{LIFECYCLE_BASE + 2}"
        redis_before = int((state / "pids" / "redis.pid").read_text())
        restart = run_script("restart", "redis", base=LIFECYCLE_BASE)
        assert restart.returncode == 0, restart.stderr
        assert int((state / "pids" / "redis.pid").read_text()) != redis_before
        assert not pathlib.Path(f"/proc/{redis_before}").exists()
        assert LIFECYCLE_BASE + 6 in listening_ports()
        leaders = {path.stem: int(path.read_text()) for path in (state / "pids").glob("*.pid")}
        assert set(leaders) >= {"postgres", "redis", "pulsar", "server", "scheduler", "lookoutingester"}
        started = {pid for leader in leaders.values() for pid in group_members(leader)}
        assert started, "no process found in the bed's process groups"
    finally:
        down = run_script("down", base=LIFECYCLE_BASE)
    assert down.returncode == 0, down.stderr
    assert not [pid for pid in started if pathlib.Path(f"/proc/{pid}").exists()]
    assert not list((state / "pids").glob("*.pid"))
    assert not listening_ports() & set(range(LIFECYCLE_BASE + 1, LIFECYCLE_BASE + 18))


@pytest.mark.timeout(2 * UP_TIMEOUT_SECONDS)
def test_each_up_makes_a_new_private_state_folder_and_drops_the_last_one(request: pytest.FixtureRequest) -> None:
    """A fixed path in /tmp could be made beforehand by another local user (a link, or a folder of theirs)."""
    if not uses_real_armada(request.config):
        pytest.skip("starts beds of its own: run with --armada real")
    first = state_folder_of_a_bed_at(LIFECYCLE_BASE)
    assert stat.S_IMODE(first.stat().st_mode) & 0o007 == 0, "other users can enter the state folder"
    second = state_folder_of_a_bed_at(LIFECYCLE_BASE)
    assert second != first and not first.exists()


def state_folder_of_a_bed_at(base: int) -> pathlib.Path:
    """Up (no executor) and down a bed at `base`; its state folder, which `down` keeps for its logs."""
    up = run_script("up", "--no-executor", base=base)
    down = run_script("down", base=base)
    assert up.returncode == 0, up.stderr[-4000:]
    assert down.returncode == 0, down.stderr
    return pathlib.Path(parse_assignments(up.stdout)["REAL_ARMADA_STATE"])


def test_a_state_folder_that_is_a_link_is_refused_before_anything_starts(tmp_path) -> None:
    link = tmp_path / "state-link"
    link.symlink_to(tmp_path)
    result = run_script("up", "--no-executor", base=BUSY_PORT_BASE, REAL_ARMADA_STATE=str(link))
    assert result.returncode != 0 and "is a symbolic link" in result.stderr


def listening_ports() -> set[int]:
    listening = subprocess.run(["ss", "-ltnH"], capture_output=True, text=True).stdout
    return {int(line.split()[3].rsplit(":", 1)[-1]) for line in listening.splitlines()}
