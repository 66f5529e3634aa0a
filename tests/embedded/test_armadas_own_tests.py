"""Armada's own client-facing tests, unchanged, against `armada-flyte dev`, or with `--armada real`
against real Armada (the bed of scripts/real-armada.sh, with our executor): the YAML cases of its
`testsuite` command, its e2e armadactl tests, and its Python client's examples and integration tests.

The tools, the e2e armadactl test binary and the cases come from Armada's Go module at the version
`scripts/build-armada-tools.sh` pins (built once per version, cached). Each case must do what this
file says it does on each server: pass, or fail for the reason given. A case that starts passing
fails here too, so these lists (and docs/embedded-server.md) stay true. Each test records the case's
own outcome and the reason (`armada_case_outcome`, `armada_case_why` in the JUnit report), which
scripts/differential-report.py tabulates for both servers.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from typing import Iterator, NamedTuple

import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient

from support.armada_channels import armada_channel, bed_authorization
from support.armada_tools import CLI, port_in_use, run_testsuite_runner, running_dev_server
from support.auth_front import auth_front
from support.pods import item, pod, python, submit_one
from support.port_lock import holding_port
from support.real_armada import on_real_armada, wait_until_queue_accepts
from support.real_parts import missing_part
from support.waiting import wait_for_state

pytestmark = pytest.mark.any_armada

PASSES = None
"""The expectation for a case that must pass."""

# Why a case can't pass against the embedded server, for each that doesn't.
NEEDS_GPUS = "needs a node with an nvidia.com/gpu device"
SENDS_NO_NAMESPACE = (
    "the example sends no namespace, which real Armada refuses too "
    "(validateHasNamespace, internal/server/submit/validation/submit_request.go)"
)

TESTSUITE_CASES = {
    "basic/cancel_by_id_1x1": PASSES,
    "basic/cancel_by_ids_1x10": PASSES,
    "basic/cancel_by_set_1x1": PASSES,
    "basic/failure_1x1": PASSES,
    "basic/failure_errimagepull": PASSES,  # no node holds the image (scripts/armada-testsuite-cluster.yaml)
    "basic/failure_namespace": PASSES,
    "basic/failure_oom_1x1": PASSES,
    "basic/gang": PASSES,
    "basic/ingress": PASSES,  # busybox nc, reached through the embedded ingress controller
    "basic/jobset_cancel_by_set_1x5": PASSES,
    "basic/jobset_cancel_inactive": PASSES,
    "basic/priorityclass_default": PASSES,
    "basic/service_headless": PASSES,
    "basic/submit_1x1": PASSES,
    "basic/submit_2x3": PASSES,
    "basic/submit_fileshare_1x1": PASSES,
    "basic/submit_random_clientid": PASSES,
    "categorization/oom": PASSES,
    "categorization/user_error": PASSES,
    "gpu/submit_gpu_1x1": NEEDS_GPUS,
    "gpu/submit_gpu_2x3": NEEDS_GPUS,
    "node/node_cancel_by_name_1x5": PASSES,
    "node/node_preempt_by_name_1x5": PASSES,
    "performance/submit_10x100": PASSES,
    "performance/submit_1x1K": PASSES,
    "performance/submit_load_1x500": PASSES,  # stress-ng pods; see scripts/armada-testsuite.sh
    "performance/submit_load_5x100": PASSES,
    "preemption/preempt_by_id_1x1": PASSES,
    "preemption/preempt_by_ids_1x5": PASSES,
    "queue/active_list_1x1": PASSES,
    "queue/crud_1x1": PASSES,
    "queue/crud_batch_5x5": PASSES,
    "reprioritization/reprioritize_by_id_1x1": PASSES,
    "reprioritization/reprioritize_by_id_1x5": PASSES,
    "reprioritization/reprioritize_by_jobset_1x1": PASSES,
    "reprioritization/reprioritize_by_jobset_1x5": PASSES,
}

# On real Armada (v0.22.7, scripts/real-armada.sh with `armada-flyte executor` and the embedded default
# cluster): why a case does otherwise there. The bed has no Kubernetes: our executor runs pods as processes.
NEEDS_KUBE_API = (
    "the testsuite finds the node through a Kubernetes API (client-go, KUBECONFIG); the bed's executor runs "
    "pods without Kubernetes, so there is none (docs/real-armada.md)"
)
PODS_NEED_KUBE_API = "its pods run kubectl against the cluster's Kubernetes API; the bed's executor serves none"
NO_INGRESS = "the bed's executor serves no ingresses or services (docs/real-armada.md, Limits)"
NO_IMAGE_CATALOGUE = (
    "the bed's executor runs the embedded default cluster, which has no image catalogue: any image runs on the "
    "host, so the unpullable image runs and the job succeeds"
)
REAL_TESTSUITE_DIFFERENCES = {
    "basic/failure_errimagepull": NO_IMAGE_CATALOGUE,
    "basic/gang": PODS_NEED_KUBE_API,
    "basic/ingress": NO_INGRESS,
    "basic/service_headless": NO_INGRESS,
    "node/node_cancel_by_name_1x5": NEEDS_KUBE_API,
    "node/node_preempt_by_name_1x5": NEEDS_KUBE_API,
}
# Left out on real Armada, and why (SKIP_CASES for scripts/armada-testsuite.sh).
NOT_RUN_ON_REAL = {
    case: "1,000 stress-ng pods at once: the bed's default cluster has no cpuShares and no image catalogue, so "
    "they would take the shared machine's CPU"
    for case in ("performance/submit_load_1x500", "performance/submit_load_5x100")
}

# Host programs that stand in for the images' own (scripts/armada-testsuite-cluster.yaml); without
# them a case can't pass (scripts/install-test-parts.sh installs them).
HOST_PROGRAMS = {
    "basic/gang": "kubectl",  # it queries the embedded cluster's Kubernetes API
    "basic/ingress": "/bin/busybox",
    "basic/service_headless": "kubectl",
    "categorization/user_error": "/bin/busybox",
    "performance/submit_load_1x500": "stress-ng",
    "performance/submit_load_5x100": "stress-ng",
}

# The queue each example submits to right after creating it. Real Armada's server sees a new queue only after
# its queue cache refresh (10 s by default, 1 s on the bed), so on real Armada the test creates it first and
# waits for a submit to pass, as Armada's own testsuite does (its submits retry for 15 s).
EXAMPLE_QUEUES = {
    "cancelling": "test-cancelling",
    "general": "test-general",
    "monitor": "test-monitor",
    "preempting": "test-preempting",
}
NO_BINOCULARS = "the bed runs no Binoculars (Armada's log service lives beside each cluster's executor)"
REAL_PYTHON_CLIENT_DIFFERENCES = {"binoculars": NO_BINOCULARS}

PYTHON_CLIENT_EXAMPLES = {
    "binoculars": PASSES,  # needs a job id: run by test_armadas_binoculars_example
    "cancelling": SENDS_NO_NAMESPACE,
    "general": SENDS_NO_NAMESPACE,
    "monitor": SENDS_NO_NAMESPACE,
    "preempting": PASSES,
    "queues": PASSES,
    "simple": SENDS_NO_NAMESPACE,
}


class FailsAt(NamedTuple):
    """A Go test that fails at this line of its file, for this reason (the steps before it passed)."""

    line: int
    why: str


CHECKS_OUTPUT_NOTHING_WROTE = (
    "the test checks the output of a step it no longer runs (an empty buffer), so it fails against any "
    "Armada; Armada's CI doesn't run e2e/armadactl_test (magefiles/tests.go runs ./cmd, ./pkg, ./internal)"
)

# e2e/armadactl_test/armadactl_test.go at the pinned version; the tests dial localhost:50051.
E2E_ARMADACTL_TESTS = {
    "TestVersion": PASSES,
    # Line 96 is the "describe" step, after CreateQueue succeeded.
    "TestQueue": FailsAt(96, CHECKS_OUTPUT_NOTHING_WROTE),
    # Line 232 checks for "Job ID:" after the submit step succeeded (queue created, job submitted to
    # namespace personal-anonymous); reprioritize and cancel are never reached.
    "TestJob": FailsAt(232, CHECKS_OUTPUT_NOTHING_WROTE),
}
E2E_ARMADACTL_PORT = 50051
E2E_PORT_WAIT_SECONDS = 900
"""How long a run waits for another run of the suite on this machine to let go of port 50051 (its e2e
armadactl tests and the dev server or front they dial take a few minutes on a busy machine)."""
# On real Armada the tests reach the bed through a forwarder on 127.0.0.1:50051.
REAL_E2E_ARMADACTL_DIFFERENCES = {
    # Line 221 submits to the queue the step before created: real Armada's server refuses it ("could not find
    # queue") until its queue cache refresh; the embedded server sees a new queue at once.
    "TestJob": FailsAt(221, "the new queue is not yet in the server's queue cache (PERMISSION_DENIED)"),
}


@pytest.fixture(autouse=True)
def _pinned_for_our_executor(request: pytest.FixtureRequest) -> None:
    """The real-Armada expectations hold for a bed whose executor is ours (pods really run)."""
    executor = request.config.getoption("--real-armada-executor")
    if on_real_armada(request.config) and executor != "ours":
        pytest.skip(f"the real-Armada expectations are for our executor, not --real-armada-executor={executor}")


def _case_names(folder: pathlib.Path) -> set[str]:
    return {f"{path.parent.name}/{path.stem}" for path in folder.glob("*/*.yaml")}


def _expectation(request: pytest.FixtureRequest, expectations: dict, real_differences: dict, name: str):
    """What `name` must do on the suite's Armada: its real-Armada difference there, else its expectation."""
    if on_real_armada(request.config) and name in real_differences:
        return real_differences[name]
    return expectations[name]


def _assert_holds_to(expected, name: str, failure: str, record_property) -> None:
    """Record the case's own outcome (and why it fails, when it must), then hold it to `expected`."""
    record_property("armada_case_outcome", "failed" if failure else "passed")
    if failure:
        record_property("armada_case_failure", failure[:300])
    if expected is PASSES:
        assert failure == "", failure
        return
    record_property("armada_case_why", expected.why if isinstance(expected, FailsAt) else expected)
    assert failure, f"{name} now passes: mark it as passing here and in docs/embedded-server.md"
    if isinstance(expected, FailsAt):
        assert f"armadactl_test.go:{expected.line}:" in failure, f"{name} failed elsewhere: {failure}"


@pytest.fixture(scope="module")
def armada_under_test(request: pytest.FixtureRequest) -> str:
    """host:port of the Armada the cases talk to: the suite's real Armada, else `armada-flyte dev` of their own."""
    if on_real_armada(request.config):
        return request.getfixturevalue("armada_url")
    return request.getfixturevalue("dev_server")


@pytest.fixture(scope="module")
def python_client_url(armada_under_test: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """Where Armada's Python client examples and integration tests dial: they build plaintext channels with no
    credentials, so on real Armada (basic auth only) a front logs their calls in as the bed's user."""
    if not on_real_armada(request.config):
        yield armada_under_test
        return
    with auth_front(armada_under_test, None, upstream_authorization=bed_authorization()) as (url, _):
        yield url


def _selected_folders() -> list[str]:
    """ARMADA_TESTSUITE_FOLDERS (space-separated, e.g. "basic queue"): run only these folders; unset: all."""
    return os.environ.get("ARMADA_TESTSUITE_FOLDERS", "").split()


def test_every_case_of_the_pinned_version_has_an_expectation(armada_tools):
    cases = _case_names(pathlib.Path(armada_tools["ARMADA_TESTCASES"]))
    assert cases == set(TESTSUITE_CASES)
    assert set(REAL_TESTSUITE_DIFFERENCES) | set(NOT_RUN_ON_REAL) <= cases
    examples = {path.stem for path in pathlib.Path(armada_tools["ARMADA_PYTHON_CLIENT"], "examples").glob("*.py")}
    assert examples == set(PYTHON_CLIENT_EXAMPLES)


@pytest.fixture(scope="module")
def testsuite_results(armada_tools, tmp_path_factory, request) -> dict[str, str]:
    """Run every case once (as Armada's CI does, a folder at a time): case -> "" or its failure."""
    out = tmp_path_factory.mktemp("armada-testsuite")
    env = {**os.environ, "OUT_DIR": str(out), "ARMADA_FLYTE_CMD": str(CLI)}
    env.pop("ARMADA_URL", None)
    if on_real_armada(request.config):
        env.update(ARMADA_URL=request.getfixturevalue("armada_url"), SKIP_CASES=" ".join(NOT_RUN_ON_REAL))
    stderr = run_testsuite_runner(_selected_folders(), env, timeout=2400).stderr
    results = {}
    for report in out.glob("*.junit.xml"):
        folder = report.name.split(".")[0].split("__")[0]  # <folder> or, for a case run alone, <folder>__<case>
        for case in ElementTree.parse(report).iter("testcase"):
            failure = case.find("failure")
            results[f"{folder}/{case.get('name')}"] = "" if failure is None else (failure.get("message") or "failed")
    assert results, f"the testsuite ran no case: {stderr[-3000:]}"
    return results


@pytest.mark.timeout(2700)  # the first case runs the whole testsuite (its fixture): about 8 minutes here
@pytest.mark.parametrize("case", sorted(TESTSUITE_CASES))
def test_armadas_testsuite_case(case, request, record_property):
    folders = _selected_folders()
    if folders and case.split("/")[0] not in folders:
        pytest.skip(f"not run: ARMADA_TESTSUITE_FOLDERS={' '.join(folders)}")
    if on_real_armada(request.config) and case in NOT_RUN_ON_REAL:
        pytest.skip(f"not run on real Armada: {NOT_RUN_ON_REAL[case]}")
    expected = _expectation(request, TESTSUITE_CASES, REAL_TESTSUITE_DIFFERENCES, case)
    program = HOST_PROGRAMS.get(case)
    if expected is PASSES and program and not shutil.which(program):
        missing_part(f"{case} needs {program} on the host (scripts/install-test-parts.sh installs it)")
    testsuite_results = request.getfixturevalue("testsuite_results")
    assert case in testsuite_results, f"{case} did not run"
    _assert_holds_to(expected, case, testsuite_results[case], record_property)


def _create_and_wait_for_queue(url: str, queue: str) -> None:
    with armada_channel(url) as channel:
        client = ArmadaClient(channel)
        client.create_queue(client.create_queue_request(name=queue, priority_factor=1))
        wait_until_queue_accepts(client, queue)


def _python_client_env(url: str) -> dict[str, str]:
    host, port = url.rsplit(":", 1)
    return {**os.environ, "ARMADA_SERVER": host, "ARMADA_PORT": port, "DISABLE_SSL": "1", "ARMADA_SSL": "false"}


@pytest.mark.parametrize("example", sorted(set(PYTHON_CLIENT_EXAMPLES) - {"binoculars"}))
def test_armadas_python_client_example(
    example, armada_tools, armada_under_test, python_client_url, request, record_property
):
    script = pathlib.Path(armada_tools["ARMADA_PYTHON_CLIENT"], "examples", f"{example}.py")
    if on_real_armada(request.config) and example in EXAMPLE_QUEUES:
        _create_and_wait_for_queue(armada_under_test, EXAMPLE_QUEUES[example])
    run = subprocess.run(
        [sys.executable, str(script)],
        env=_python_client_env(python_client_url),
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = run.stdout + run.stderr
    failed = run.returncode != 0 or "Traceback" in output or "_InactiveRpcError" in output or "Failed to" in output
    expected = _expectation(request, PYTHON_CLIENT_EXAMPLES, REAL_PYTHON_CLIENT_DIFFERENCES, example)
    _assert_holds_to(expected, example, output[-3000:] if failed else "", record_property)


def test_armadas_python_client_integration_tests(armada_tools, python_client_url, record_property):
    tests = pathlib.Path(armada_tools["ARMADA_PYTHON_CLIENT"], "integration")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tests), str(tests)],
        env=_python_client_env(python_client_url),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tests,
    )
    ran = re.search(r"\b\d+ passed\b", run.stdout)  # exit 0 with every test skipped would check nothing
    failure = run.stdout[-4000:] if run.returncode or not ran else ""
    _assert_holds_to(PASSES, "the integration tests", failure, record_property)


def test_armadas_binoculars_example(armada_tools, armada_under_test, request, record_property):
    """The example prints a job's log through Binoculars' API (JobLogClient always asks for namespace default)."""
    _create_and_wait_for_queue(armada_under_test, "binoculars-example")
    with armada_channel(armada_under_test) as channel:
        client = ArmadaClient(channel)
        job_id = submit_one(client, "binoculars-example", "logs", item(pod(python("print('hello from the pod')"))))
        wait_for_state(client, job_id, submit_pb2.SUCCEEDED, timeout=120)
    host, port = armada_under_test.rsplit(":", 1)
    script = pathlib.Path(armada_tools["ARMADA_PYTHON_CLIENT"], "examples", "binoculars.py")
    env = {**os.environ, "BINOCULARS_SERVER": host, "BINOCULARS_PORT": port, "JOB_ID": job_id, "DISABLE_SSL": "1"}
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    printed = run.returncode == 0 and "hello from the pod" in run.stdout
    failure = "" if printed else f"exit {run.returncode}: {run.stderr[-3000:]}"
    _assert_holds_to(
        _expectation(request, PYTHON_CLIENT_EXAMPLES, REAL_PYTHON_CLIENT_DIFFERENCES, "binoculars"),
        "binoculars",
        failure,
        record_property,
    )


def _go_test_results(output: str) -> dict[str, str]:
    """`go test -test.v` output -> test name -> "" (passed) or its failure report (with `file.go:LINE:`)."""
    results, report, current = {}, {}, None
    for line in output.splitlines():
        if match := re.match(r"=== RUN\s+(\S+)", line):
            current = match.group(1)
            report[current] = []
        elif match := re.match(r"--- (PASS|FAIL|SKIP): (\S+)", line):
            results[match.group(2)] = (
                "" if match.group(1) == "PASS" else "\n".join(report.get(match.group(2), [])) or line
            )
            current = None
        elif current is not None:
            report[current].append(line)
    return results


@contextlib.contextmanager
def _armada_on_e2e_port(request: pytest.FixtureRequest) -> Iterator[None]:
    """The suite's Armada on localhost:50051, the e2e tests' fixed address: real Armada through a front that
    logs their calls in as the bed's user (the tests dial without credentials), else an `armada-flyte dev`
    of their own."""
    if on_real_armada(request.config):
        upstream = request.getfixturevalue("armada_url")
        with auth_front(upstream, None, upstream_authorization=bed_authorization(), port=E2E_ARMADACTL_PORT):
            yield
    else:
        with running_dev_server(E2E_ARMADACTL_PORT):
            yield


@pytest.fixture(scope="module")
def e2e_armadactl_results(armada_tools, tmp_path_factory, request) -> dict[str, str]:
    """Armada's e2e armadactl tests, run once against the suite's Armada on localhost:50051, their fixed address."""
    binary = armada_tools.get("ARMADA_E2E_ARMADACTL_TEST", "")
    if not binary or not os.access(binary, os.X_OK):
        missing_part(f"Armada's e2e armadactl test binary was not built ({binary or 'no path'})")
    # The tests can't be pointed elsewhere (armadactl_test.go: ArmadaUrl "localhost:50051"): another run of this
    # suite on the machine gets the port after this one, and whatever else holds it is named.
    with holding_port(E2E_ARMADACTL_PORT, E2E_PORT_WAIT_SECONDS):
        taken = port_in_use(E2E_ARMADACTL_PORT)
        if taken:
            missing_part(
                f"{taken} is in use: Armada's e2e armadactl tests dial localhost:{E2E_ARMADACTL_PORT} and can't be "
                "pointed elsewhere; stop whatever listens there (another `armada-flyte dev`?) and run again"
            )
        with _armada_on_e2e_port(request):
            run = subprocess.run(
                [binary, "-test.v", "-test.timeout", "240s"],
                cwd=tmp_path_factory.mktemp("armadactl-e2e"),
                capture_output=True,
                text=True,
                timeout=300,
            )
    results = _go_test_results(run.stdout + run.stderr)
    assert results, f"the e2e armadactl tests ran no test: {(run.stdout + run.stderr)[-3000:]}"
    return results


@pytest.mark.parametrize("test", sorted(E2E_ARMADACTL_TESTS))
def test_armadas_e2e_armadactl_test(test, e2e_armadactl_results, request, record_property):
    assert test in e2e_armadactl_results, f"{test} did not run: {sorted(e2e_armadactl_results)}"
    expected = _expectation(request, E2E_ARMADACTL_TESTS, REAL_E2E_ARMADACTL_DIFFERENCES, test)
    _assert_holds_to(expected, test, e2e_armadactl_results[test], record_property)


def test_every_e2e_armadactl_test_has_an_expectation(e2e_armadactl_results):
    assert set(e2e_armadactl_results) == set(E2E_ARMADACTL_TESTS)
