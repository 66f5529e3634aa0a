"""`--armada {embedded,real}`: which Armada the conformance suite talks to, and the real one's bed.

With `--armada real` the suite runs against real Armada: the endpoint in ARMADA_URL when it is
set (scripts/test.sh starts the bed itself), else a bed this session starts with
`scripts/real-armada.sh up` and stops with `down` at the end. A bed that does not come up is a
test failure under CI and a skip locally (`support.real_parts.missing_part`).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
from typing import Iterator

import grpc
import pytest
from armada_client.client import ArmadaClient

from support.pods import item, pod, submit_one
from support.real_parts import missing_part
from support.waiting import wait_until

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "real-armada.sh"
EXECUTORS = {"ours": [], "fake": ["--fake-executor"], "none": ["--no-executor"]}
# The first build compiles Armada and fetches Pulsar (minutes); later starts take seconds.
UP_TIMEOUT_SECONDS = 1800
PROBE_JOB_SET = "queue-ready-probe"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("armada")
    group.addoption(
        "--armada",
        choices=("embedded", "real"),
        default="embedded",
        help="the Armada the conformance suite talks to: the embedded server, or real Armada "
        "(ARMADA_URL when set, else a bed from scripts/real-armada.sh up)",
    )
    group.addoption(
        "--real-armada-executor",
        choices=sorted(EXECUTORS),
        default=os.environ.get("REAL_ARMADA_EXECUTOR", "ours"),
        help="the executor a bed started by the tests runs: ours (armada-flyte executor), fake "
        "(Armada's simulated one) or none (default: $REAL_ARMADA_EXECUTOR, else ours)",
    )


def uses_real_armada(config: pytest.Config) -> bool:
    return config.getoption("--armada") == "real"


def parse_assignments(stdout: str) -> dict[str, str]:
    """The NAME=value lines `real-armada.sh up` prints (values may be shell-quoted paths)."""
    found = {}
    for line in stdout.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.isidentifier():
            found[name] = value.strip("'")
    return found


@pytest.fixture(scope="session")
def real_armada(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """Real Armada for this session: {"ARMADA_URL": host:port, ...}; started here unless ARMADA_URL is set."""
    if os.environ.get("ARMADA_URL"):
        yield {"ARMADA_URL": os.environ["ARMADA_URL"]}
        return
    executor = request.config.getoption("--real-armada-executor")
    try:
        result = subprocess.run(
            [str(SCRIPT), "up", *EXECUTORS[executor]],
            capture_output=True,
            text=True,
            timeout=UP_TIMEOUT_SECONDS,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        subprocess.run([str(SCRIPT), "down"], capture_output=True, timeout=120)
        missing_part(f"scripts/real-armada.sh up did not finish: {exc}")
    if result.returncode != 0:
        missing_part(f"real Armada did not come up (scripts/real-armada.sh up):\n{result.stderr[-4000:]}")
    bed = parse_assignments(result.stdout)
    try:
        yield bed
    finally:
        down = subprocess.run([str(SCRIPT), "down"], capture_output=True, text=True, timeout=120)
        assert down.returncode == 0, f"scripts/real-armada.sh down failed:\n{down.stderr}"


def wait_until_queue_accepts(client: ArmadaClient, queue: str, timeout: float = 30.0) -> None:
    """Return once a submit to `queue` is accepted (real Armada's server sees a new queue only
    after its queue cache refresh); the probe job is cancelled at once."""

    def accepted() -> str:
        try:
            return submit_one(client, queue, PROBE_JOB_SET, item(pod()))
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.PERMISSION_DENIED:  # "could not find queue"
                return ""
            raise

    job_id = wait_until(accepted, timeout, f"a submit to queue {queue} to be accepted")
    client.cancel_jobs(queue=queue, job_set_id=PROBE_JOB_SET, job_id=job_id)
