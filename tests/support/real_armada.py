"""`--armada {embedded,real}`: which Armada the conformance suite talks to, and the real one's bed.

With `--armada real` the suite runs against real Armada: the endpoint in ARMADA_URL when it is
set (scripts/test.sh starts the bed itself), else a bed this session starts with
`scripts/real-armada.sh up` and stops with `down` at the end. A bed that does not come up is a
test failure under CI and a skip locally (`support.real_parts.missing_part`). A bed takes basic auth
only: its user and password file (ARMADA_FLYTE_AUTH_USERNAME, ARMADA_FLYTE_AUTH_PASSWORD_FILE) are in
the environment for the session, where the connector, c0 and `support.armada_channels` read them.

The bed's executor holds the Secrets pods read (`bed_secrets`): the file in REAL_ARMADA_SECRETS_FILE
when set (scripts/test.sh writes one with `write_bed_secrets`), else one this session writes with
fresh values. A bed started here finds free ports itself (`bed_of_its_own`), as do the beds tests start.
"""

from __future__ import annotations

import base64
import contextlib
import os
import pathlib
import subprocess
import uuid
from typing import Iterator, Optional

import grpc
import pytest
import yaml
from armada_client.client import ArmadaClient

from support.armada_channels import PASSWORD_FILE_VARIABLE, USERNAME_VARIABLE, armada_channel, bed_credentials
from support.pods import item, pod, submit_one
from support.real_parts import missing_part
from support.waiting import wait_until

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "real-armada.sh"
EXECUTORS = {"ours": [], "fake": ["--fake-executor"], "none": ["--no-executor"], "kubernetes": ["--kubernetes"]}
# The first build compiles Armada and fetches Pulsar (minutes); later starts take seconds.
UP_TIMEOUT_SECONDS = 1800
PROBE_JOB_SET = "queue-ready-probe"
BED_VARIABLES = (
    "ARMADA_URL",
    "KUBECONFIG",
    "ARMADA_FLYTE_BINOCULARS_URL",
    "ARMADA_EXECUTOR_API",
    "REAL_ARMADA_LOGS",
    "REAL_ARMADA_STATE",
    USERNAME_VARIABLE,
    PASSWORD_FILE_VARIABLE,
)
TASK_SECRET_GROUP = "e2e-task-creds"
"""The Secret the e2e project's `secret_tasks` read (keys api_key, token)."""


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
        "(Armada's simulated one), kubernetes (Armada's own on a real Kubernetes API server, our node agent as "
        "its kubelet) or none (default: $REAL_ARMADA_EXECUTOR, else ours)",
    )


def uses_real_armada(config: pytest.Config) -> bool:
    return config.getoption("--armada") == "real"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On real Armada, tests marked `embedded_only` (they look behind the API) skip, and so do those marked
    `needs_binoculars` unless the bed has Kubernetes (Armada's Binoculars reads logs through it)."""
    if not uses_real_armada(config):
        return
    skip = pytest.mark.skip(reason="looks behind the API at the embedded server (the suite runs against real Armada)")
    no_logs = pytest.mark.skip(reason="reads logs through Binoculars: a real-Armada bed has it only with Kubernetes")
    with_binoculars = bed_has_binoculars(config)
    for test in items:
        if "embedded_only" in test.keywords:
            test.add_marker(skip)
        elif "needs_binoculars" in test.keywords and not with_binoculars:
            test.add_marker(no_logs)


def bed_has_binoculars(config: pytest.Config) -> bool:
    """Whether the real bed runs Armada's Binoculars: one with Kubernetes (the environment's, or started here)."""
    if os.environ.get("ARMADA_URL"):
        return bool(os.environ.get("ARMADA_FLYTE_BINOCULARS_URL"))
    return config.getoption("--real-armada-executor") == "kubernetes"


def on_real_armada(config: pytest.Config) -> bool:
    """`--armada real`, or ARMADA_URL pointing at an Armada of the caller's."""
    return uses_real_armada(config) or bool(os.environ.get("ARMADA_URL"))


def parse_assignments(stdout: str) -> dict[str, str]:
    """The NAME=value lines `real-armada.sh up` prints (values may be shell-quoted paths)."""
    found = {}
    for line in stdout.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.isidentifier():
            found[name] = value.strip("'")
    return found


def write_bed_secrets(path: pathlib.Path) -> None:
    """Write the Secrets a bed's executor holds (the blob keys, the e2e task secrets with fresh values)
    as Kubernetes Secret manifests to `path`."""
    from armada_flyte.local.stack import blob_credentials_manifest

    task_secrets = {"api_key": f"api-{uuid.uuid4().hex}", "token": f"tok-{uuid.uuid4().hex}"}
    task_manifest = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": TASK_SECRET_GROUP}}
    path.write_text(yaml.safe_dump_all([blob_credentials_manifest(), {**task_manifest, "stringData": task_secrets}]))


def read_bed_secrets(path: pathlib.Path) -> dict[str, dict[str, str]]:
    """The Secrets of a manifests file, {name: {key: value}} (`data` base64, `stringData` plain)."""
    secrets = {}
    for document in (d for d in yaml.safe_load_all(path.read_text()) if d):
        values = {key: base64.b64decode(value).decode() for key, value in (document.get("data") or {}).items()}
        secrets[document["metadata"]["name"]] = {**values, **(document.get("stringData") or {})}
    return secrets


@pytest.fixture(scope="session")
def bed_secrets_file(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The Secrets file of the bed's executor: REAL_ARMADA_SECRETS_FILE, else one written for this session."""
    if os.environ.get("REAL_ARMADA_SECRETS_FILE"):
        return pathlib.Path(os.environ["REAL_ARMADA_SECRETS_FILE"])
    path = tmp_path_factory.mktemp("real-armada") / "secrets.yaml"
    write_bed_secrets(path)
    return path


@pytest.fixture(scope="session")
def bed_secrets(bed_secrets_file: pathlib.Path) -> dict[str, dict[str, str]]:
    """The Secrets the bed's executor holds, {name: {key: value}}."""
    return read_bed_secrets(bed_secrets_file)


@pytest.fixture(scope="session")
def real_armada(request: pytest.FixtureRequest, bed_secrets_file: pathlib.Path) -> Iterator[dict[str, str]]:
    """Real Armada for this session: {"ARMADA_URL": host:port, ...}; started here unless ARMADA_URL is set."""
    if os.environ.get("ARMADA_URL"):
        yield {name: os.environ[name] for name in BED_VARIABLES if os.environ.get(name)}
        return
    executor = request.config.getoption("--real-armada-executor")
    with bed_of_its_own(*EXECUTORS[executor], REAL_ARMADA_SECRETS_FILE=str(bed_secrets_file)) as bed:
        credentials = bed_credentials(bed)
        # A bed with Kubernetes has Binoculars beside its executor: the connector's log links read it.
        credentials.update({name: bed[name] for name in ("ARMADA_FLYTE_BINOCULARS_URL",) if name in bed})
        os.environ.update(credentials)  # the session's connector, c0 and test clients log in as the bed's user
        try:
            yield bed
        finally:
            for name in credentials:
                os.environ.pop(name, None)


BED_HANDLES = ("REAL_ARMADA_STATE", "REAL_ARMADA_LOGS", "REAL_ARMADA_PORT_BASE")
"""What names a bed to scripts/real-armada.sh: left out when a test starts one of its own."""


def bed_script(*args: str, bed: Optional[dict[str, str]] = None, timeout: float = UP_TIMEOUT_SECONDS, **env: str):
    """scripts/real-armada.sh `args` for `bed` (by its handle, REAL_ARMADA_STATE) or, without one, for no bed of the
    environment's (an `up` then finds free ports of its own)."""
    clean = {name: value for name, value in os.environ.items() if name not in BED_HANDLES}
    handle = {"REAL_ARMADA_STATE": bed["REAL_ARMADA_STATE"]} if bed else {}
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, env={**clean, **handle, **env}
    )


@contextlib.contextmanager
def bed_of_its_own(*up_options: str, **env: str) -> Iterator[dict[str, str]]:
    """A bed started for a test or a module (`up` with `up_options`, on ports it finds free), stopped after;
    yields what `up` printed. One that does not come up is a missing part (a failure under CI)."""
    try:
        up = bed_script("up", *up_options, **env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        missing_part(f"scripts/real-armada.sh up did not finish: {exc}")
    bed = parse_assignments(up.stdout)
    try:
        if up.returncode != 0:
            missing_part(f"real Armada did not come up (scripts/real-armada.sh up):\n{up.stderr[-4000:]}")
        yield bed
    finally:
        if bed.get("REAL_ARMADA_STATE"):
            down = bed_script("down", bed=bed, timeout=300)
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


def bed_log_tails(bed: dict[str, str], components: tuple[str, ...] = ("executor", "scheduler", "server")) -> str:
    """The last lines of the bed's component logs (REAL_ARMADA_LOGS), for a failure message; "" without logs."""
    folder = bed.get("REAL_ARMADA_LOGS")
    if not folder:
        return ""
    parts = []
    for component in components:
        path = pathlib.Path(folder) / f"{component}.log"
        try:
            lines = path.read_text(errors="replace").splitlines()[-30:]
        except OSError as exc:
            lines = [f"({exc})"]
        parts.append(f"--- last lines of {path}:\n" + "\n".join(lines))
    return "\n".join(parts)


class BedExecutor:
    """The executor of a bed, when it is ours (`armada-flyte executor`): restarted in place with another command
    line (`real-armada.sh stop`/`start executor`, which waits until it leases again), and given its own back."""

    def __init__(self, bed: dict[str, str]):
        self.bed = bed
        self.command_file = pathlib.Path(bed.get("REAL_ARMADA_STATE", "")) / "commands" / "executor"
        self.command = self.command_file.read_text() if self.command_file.is_file() else ""

    @property
    def is_ours(self) -> bool:
        return " executor --scheduler " in self.command

    def restart(self, command_line: str) -> None:
        """Stop the executor, then start it with `command_line` (a shell command line) and wait until it leases."""
        for verb in ("stop", "start"):
            if verb == "start":
                self.command_file.write_text(command_line.strip() + "\n")
            done = bed_script(verb, "executor", bed=self.bed, timeout=300)
            assert done.returncode == 0, f"real-armada.sh {verb} executor:\n{done.stderr[-3000:]}"

    def restore(self) -> None:
        """Run the executor's own command again (as the bed started it)."""
        self.restart(self.command)

    @contextlib.contextmanager
    def running(self, command_line: str) -> Iterator[None]:
        """The executor runs `command_line` inside the block and its own command after, however the block ends;
        an assertion failing inside carries the last lines of the executor's and the scheduler's logs."""
        try:
            self.restart(command_line)
            yield
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{bed_log_tails(self.bed, ('executor', 'scheduler'))}") from exc
        finally:
            self.restore()


def ensure_queues(armada_url: str, queues: tuple[str, ...]) -> None:
    """Create `queues` on real Armada (an upsert) and return once each accepts submits."""
    channel = armada_channel(armada_url)
    try:
        client = ArmadaClient(channel)
        for queue in queues:
            client.create_queue(client.create_queue_request(queue, priority_factor=1.0))
            wait_until_queue_accepts(client, queue)
    finally:
        channel.close()


# Where real Armada v0.22.7 answers otherwise than the test expects (it asserts the embedded
# server's behaviour; where they differ, Armada wins: fix the test or the server, then drop the entry).
# Where real Armada is only slower (a new queue, a job set's first event, a reprioritize of a job the
# scheduler doesn't hold yet) the tests wait instead. docs/embedded-server.md lists these with their causes.
INDEXED_RESOURCES = (
    "v0.22.7 indexes resources: a job larger than every node reads 'insufficient resources available', not "
    "'pod requires X, but only Y is available' (the embedded server names the amounts)"
)
DIFFERS_ON_REAL_ARMADA: dict[str, str] = {
    "test_cancel.py::test_job_details_keep_the_cancel_reason": (
        "v0.22.7's scheduler emits CancelledJob without the request's reason, and the lookout ingester takes "
        "cancel_reason from that event (lookoutingester/instructions, handleCancelledJob): it stays empty"
    ),
    "test_cancel.py::test_a_job_set_cancel_gives_only_cancelled_events": (
        "v0.22.7 emits a per-job 'cancelling' event for a job-set cancel; the test follows Armada's later "
        "source, where CancelJobSet converts to no api event (conversions.go)"
    ),
    "test_pod_lifecycle.py::test_an_absurd_quantity_is_rejected_alone_and_later_jobs_still_run": (
        "v0.22.7 accepts cpu '1e5000' and leases it (our executor then runs the pod); the embedded server "
        "rejects a quantity no node can ever hold"
    ),
    "test_scheduling.py::test_more_cpu_than_any_node_has_is_rejected": INDEXED_RESOURCES,
    "test_scheduling.py::test_more_memory_than_any_node_has_is_rejected": INDEXED_RESOURCES,
    "test_server_rules.py::test_a_preempted_job_ends_preempting_preempted_failed": (
        "v0.22.7 words the reason 'Preempted by <user>' (scheduleringester, buildPreemptionReason); the test "
        "follows Armada's later default, 'Preempted - preemption requested via API'"
    ),
    "test_submit_validation.py::test_invalid_item_fails_the_whole_request[grace period over 5 min]": (
        "v0.22.7 prints the grace period bounds in nanoseconds ('must be [1000000000, 300000000000], or omitted')"
    ),
}
# Timing: these fail on some runs only (not strict). None today.
DIFFERS_SOMETIMES_ON_REAL_ARMADA: dict[str, str] = {}
POD_FAILS = "needs pods that really run: Armada's fake executor ends every pod SUCCEEDED"
# Tests that need an executor running pods (ours, `armada-flyte executor`), not Armada's fake one.
NEEDS_PODS_THAT_RUN: dict[str, str] = {
    "test_job_lifecycle.py::test_a_failing_job_reports_the_tail_of_its_stderr": POD_FAILS,
    "test_job_lifecycle.py::test_a_failed_event_carries_the_exit_code_in_its_container_status": POD_FAILS,
    "test_memory_limits.py::test_tail_of_dev_zero_is_oomkilled": POD_FAILS,
    "test_memory_limits.py::test_writing_dev_shm_past_the_limit_is_oomkilled": POD_FAILS,
    "test_memory_limits.py::test_a_memory_emptydir_counts_toward_the_limit": POD_FAILS,
    "test_memory_limits.py::test_a_short_spike_over_the_limit_is_oomkilled": POD_FAILS,
    (
        "test_pod_lifecycle.py::"
        "test_a_failing_init_container_fails_the_run_with_its_exit_code_and_no_main_container_runs"
    ): POD_FAILS,
    "test_pod_lifecycle.py::test_the_pod_fails_with_the_exit_code_of_the_main_container_that_failed": POD_FAILS,
    "test_pod_lifecycle.py::test_a_container_over_its_memory_limit_is_oomkilled": POD_FAILS,
    "test_pod_lifecycle.py::test_active_deadline_seconds_kills_the_pod": POD_FAILS,
    "test_pod_lifecycle.py::test_a_pod_in_a_namespace_that_does_not_exist_fails": POD_FAILS,
}
SHORT_PODS = "needs a job still running when it acts: Armada's fake executor ends pods after about a second"
# Races with the fake executor's short pods: fail on some runs only (not strict).
RACES_THE_FAKE_EXECUTOR: dict[str, str] = {
    "test_server_rules.py::test_preempting_answers_every_id_and_preempts_only_preemptible_jobs": SHORT_PODS,
}


def mark_known_failures(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests known to fail on real Armada as xfails, with the reason. Those that always
    fail are strict, so the lists stay true (a test that starts passing fails the run until its
    entry goes); those that fail on some runs only are not."""
    always, sometimes = dict(DIFFERS_ON_REAL_ARMADA), dict(DIFFERS_SOMETIMES_ON_REAL_ARMADA)
    if config.getoption("--real-armada-executor") == "fake":
        always.update(NEEDS_PODS_THAT_RUN)
        sometimes.update(RACES_THE_FAKE_EXECUTOR)
    for test in items:
        name = test.nodeid.rsplit("/", 1)[-1]  # file::test[case]; an entry names one case or all of them
        for known, strict in ((always, True), (sometimes, False)):
            reason = known.get(name) or known.get(name.split("[", 1)[0])
            if reason:
                test.add_marker(pytest.mark.xfail(reason=f"on real Armada: {reason}", strict=strict))
