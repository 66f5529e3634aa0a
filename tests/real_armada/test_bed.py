"""scripts/real-armada.sh: clear errors before anything starts, and `down` leaves nothing behind.

The start-and-stop test needs Armada built (minutes the first time), so it runs with `--armada real`.
"""

from __future__ import annotations

import os
import pathlib
import random
import socket
import stat
import subprocess

import pytest

from support.real_armada import BED_HANDLES, SCRIPT, UP_TIMEOUT_SECONDS, bed_script, parse_assignments, uses_real_armada

BED_INDEX = pathlib.Path(os.environ.get("ARMADA_FLYTE_CACHE", pathlib.Path.home() / ".cache/armada-flyte"))
BED_INDEX = BED_INDEX / "real-armada-beds"


def unused_base() -> int:
    """A base no bed was ever recorded at, whose ports are all free (found now, not fixed: another checkout or
    test on this machine may hold any fixed one)."""
    taken = listening_ports()
    for base in random.sample(range(20000, 32000, 100), 120):
        if not (BED_INDEX / str(base)).exists() and not taken & set(range(base + 1, base + 18)):
            return base
    raise AssertionError("no unused base found among 120")


def run_script(*args: str, base: int, **env: str) -> subprocess.CompletedProcess[str]:
    """The script at an explicit base (REAL_ARMADA_PORT_BASE), without the environment's bed."""
    clean = {name: value for name, value in os.environ.items() if name not in BED_HANDLES}
    return subprocess.run(
        [str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=UP_TIMEOUT_SECONDS,
        env={**clean, "REAL_ARMADA_PORT_BASE": str(base), **env},
    )


def test_an_unknown_command_is_refused_with_the_usage() -> None:
    result = run_script("launch", base=unused_base())
    assert result.returncode != 0
    assert "unknown command 'launch': use up, down, status, stop, start or restart" in result.stderr


@pytest.mark.parametrize("verb", ["stop", "start", "restart"])
def test_an_unknown_component_is_refused_with_the_components_names(verb: str) -> None:
    result = run_script(verb, "lookout", base=unused_base())
    assert result.returncode != 0
    assert (
        "unknown component 'lookout': use one of postgres redis pulsar scheduleringester eventingester "
        "lookoutingester server scheduler etcd kube-apiserver kube-scheduler kube-controller-manager node-agent "
        "executor binoculars our-executor"
    ) in result.stderr


def test_starting_a_component_without_a_bed_says_there_is_none() -> None:
    base = unused_base()
    result = run_script("start", "redis", base=base)
    assert result.returncode != 0
    assert f"no redis was started for REAL_ARMADA_PORT_BASE={base} (no bed is recorded in " in result.stderr


def test_a_verb_without_a_bed_named_says_how_to_name_one() -> None:
    clean = {name: value for name, value in os.environ.items() if name not in BED_HANDLES}
    result = subprocess.run([str(SCRIPT), "status"], capture_output=True, text=True, timeout=60, env=clean)
    assert result.returncode != 0
    assert "set REAL_ARMADA_STATE to the folder `up` printed" in result.stdout


def test_a_port_in_use_is_named_with_its_component_before_anything_starts() -> None:
    base = unused_base()
    postgres_port = base + 5
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", postgres_port))
        holder.listen()
        result = run_script("up", "--no-executor", base=base)
    assert result.returncode != 0
    assert f"port {postgres_port} (postgres, REAL_ARMADA_PORT_BASE={base} + 5) is already in use" in (result.stderr)
    assert result.stdout == ""


def test_up_without_an_executor_command_says_how_to_go_on() -> None:
    result = run_script("up", base=unused_base(), ARMADA_FLYTE_CMD="/bin/false")
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
    up = bed_script("up", "--no-executor")
    bed = parse_assignments(up.stdout)
    assert up.returncode == 0, up.stderr[-4000:]
    state, base = pathlib.Path(bed["REAL_ARMADA_STATE"]), int(bed["ARMADA_URL"].rsplit(":", 1)[1]) - 1
    try:
        assert bed["ARMADA_EXECUTOR_API"] == f"127.0.0.1:{base + 2}"
        redis_before = int((state / "pids" / "redis.pid").read_text())
        restart = bed_script("restart", "redis", bed=bed)
        assert restart.returncode == 0, restart.stderr
        assert int((state / "pids" / "redis.pid").read_text()) != redis_before
        assert not pathlib.Path(f"/proc/{redis_before}").exists()
        assert base + 6 in listening_ports()
        leaders = {path.stem: int(path.read_text()) for path in (state / "pids").glob("*.pid")}
        assert set(leaders) >= {"postgres", "redis", "pulsar", "server", "scheduler", "lookoutingester"}
        started = {pid for leader in leaders.values() for pid in group_members(leader)}
        assert started, "no process found in the bed's process groups"
    finally:
        down = bed_script("down", bed=bed)
    assert down.returncode == 0, down.stderr
    assert not [pid for pid in started if pathlib.Path(f"/proc/{pid}").exists()]
    assert not list((state / "pids").glob("*.pid"))
    assert not listening_ports() & set(range(base + 1, base + 18))


@pytest.mark.timeout(UP_TIMEOUT_SECONDS)
def test_two_beds_started_together_without_a_base_come_up_side_by_side(request: pytest.FixtureRequest) -> None:
    """Each `up` finds free ports itself (two checkouts on one machine, or scripts/test.sh's five groups)."""
    if not uses_real_armada(request.config):
        pytest.skip("starts beds of its own: run with --armada real")
    clean = {name: value for name, value in os.environ.items() if name not in BED_HANDLES}
    command = [str(SCRIPT), "up", "--no-executor"]
    ups = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean)]
    ups.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean))
    outputs = [up.communicate(timeout=UP_TIMEOUT_SECONDS) for up in ups]
    beds = [parse_assignments(stdout) for stdout, _ in outputs]
    try:
        failed = [
            f"up #{n} exited {up.returncode}:\n{stderr[-4000:]}"
            for n, (up, (_, stderr)) in enumerate(zip(ups, outputs))
            if up.returncode
        ]
        if failed:  # each failed `up`'s own words, whole (an assertion's repr cuts the middle out)
            pytest.fail("\n\n".join(failed), pytrace=False)
        assert beds[0]["ARMADA_URL"] != beds[1]["ARMADA_URL"]
        assert beds[0]["REAL_ARMADA_STATE"] != beds[1]["REAL_ARMADA_STATE"]
        for bed in beds:
            assert bed_script("status", bed=bed).returncode == 0
    finally:
        downs = [bed_script("down", bed=bed) for bed in beds if bed.get("REAL_ARMADA_STATE")]
    assert all(down.returncode == 0 for down in downs)


@pytest.mark.timeout(2 * UP_TIMEOUT_SECONDS)
def test_each_up_makes_a_new_private_state_folder_and_drops_the_last_one(request: pytest.FixtureRequest) -> None:
    """A fixed path in /tmp could be made beforehand by another local user (a link, or a folder of theirs)."""
    if not uses_real_armada(request.config):
        pytest.skip("starts beds of its own: run with --armada real")
    base = unused_base()
    first = state_folder_of_a_bed_at(base)
    assert stat.S_IMODE(first.stat().st_mode) & 0o007 == 0, "other users can enter the state folder"
    second = state_folder_of_a_bed_at(base)
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
    result = run_script("up", "--no-executor", base=unused_base(), REAL_ARMADA_STATE=str(link))
    assert result.returncode != 0 and "is a symbolic link" in result.stderr


def listening_ports() -> set[int]:
    listening = subprocess.run(["ss", "-ltnH"], capture_output=True, text=True).stdout
    return {int(line.split()[3].rsplit(":", 1)[-1]) for line in listening.splitlines()}
