"""Armada's own client-facing tests, unchanged, against `armada-flyte dev`: the YAML cases of its
`testsuite` command, and its Python client's examples and integration tests.

The tools, the e2e armadactl test binary and the cases come from Armada's Go module at the version
`scripts/build-armada-tools.sh` pins (built once per version, cached). Each case must do what this
file says it does: pass, or fail for the reason given. A case that starts passing fails here too,
so this list (and docs/embedded-server.md) stays true.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from typing import NamedTuple

import pytest

from support.armada_tools import CLI, port_in_use, run_testsuite_runner, running_dev_server
from support.real_parts import missing_part

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


def _case_names(folder: pathlib.Path) -> set[str]:
    return {f"{path.parent.name}/{path.stem}" for path in folder.glob("*/*.yaml")}


def test_every_case_of_the_pinned_version_has_an_expectation(armada_tools):
    cases = _case_names(pathlib.Path(armada_tools["ARMADA_TESTCASES"]))
    assert cases == set(TESTSUITE_CASES)
    examples = {path.stem for path in pathlib.Path(armada_tools["ARMADA_PYTHON_CLIENT"], "examples").glob("*.py")}
    assert examples == set(PYTHON_CLIENT_EXAMPLES)


@pytest.fixture(scope="module")
def testsuite_results(armada_tools, tmp_path_factory) -> dict[str, str]:
    """Run every case once (as Armada's CI does, a folder at a time): case -> "" or its failure."""
    out = tmp_path_factory.mktemp("armada-testsuite")
    env = {**os.environ, "OUT_DIR": str(out), "ARMADA_FLYTE_CMD": str(CLI)}
    env.pop("ARMADA_URL", None)
    stderr = run_testsuite_runner([], env, timeout=1500).stderr
    results = {}
    for report in out.glob("*.junit.xml"):
        folder = report.name.split(".")[0].split("__")[0]  # <folder> or, for a case run alone, <folder>__<case>
        for case in ElementTree.parse(report).iter("testcase"):
            failure = case.find("failure")
            results[f"{folder}/{case.get('name')}"] = "" if failure is None else (failure.get("message") or "failed")
    assert results, f"the testsuite ran no case: {stderr[-3000:]}"
    return results


@pytest.mark.timeout(1800)  # the first case runs the whole testsuite (its fixture): about 8 minutes here
@pytest.mark.parametrize("case", sorted(TESTSUITE_CASES))
def test_armadas_testsuite_case(case, testsuite_results):
    why_not = TESTSUITE_CASES[case]
    program = HOST_PROGRAMS.get(case)
    if why_not is PASSES and program and not shutil.which(program):
        missing_part(f"{case} needs {program} on the host (scripts/install-test-parts.sh installs it)")
    assert case in testsuite_results, f"{case} did not run"
    failure = testsuite_results[case]
    if why_not is PASSES:
        assert failure == "", failure
    else:
        assert failure, f"{case} now passes: mark it as passing here and in docs/embedded-server.md"


def _python_client_env(url: str) -> dict[str, str]:
    host, port = url.rsplit(":", 1)
    return {**os.environ, "ARMADA_SERVER": host, "ARMADA_PORT": port, "DISABLE_SSL": "1", "ARMADA_SSL": "false"}


@pytest.mark.parametrize("example", sorted(set(PYTHON_CLIENT_EXAMPLES) - {"binoculars"}))
def test_armadas_python_client_example(example, armada_tools, dev_server):
    script = pathlib.Path(armada_tools["ARMADA_PYTHON_CLIENT"], "examples", f"{example}.py")
    run = subprocess.run(
        [sys.executable, str(script)], env=_python_client_env(dev_server), capture_output=True, text=True, timeout=300
    )
    output = run.stdout + run.stderr
    failed = run.returncode != 0 or "Traceback" in output or "_InactiveRpcError" in output or "Failed to" in output
    if PYTHON_CLIENT_EXAMPLES[example] is PASSES:
        assert not failed, output[-3000:]
    else:
        assert failed, f"{example} now passes: mark it as passing here and in docs/embedded-server.md"


def test_armadas_python_client_integration_tests(armada_tools, dev_server):
    tests = pathlib.Path(armada_tools["ARMADA_PYTHON_CLIENT"], "integration")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tests), str(tests)],
        env=_python_client_env(dev_server),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tests,
    )
    assert run.returncode == 0, run.stdout[-4000:]


def test_armadas_binoculars_example(armada_tools, dev_server):
    """The example prints a job's log through Binoculars' API (JobLogClient always asks for namespace default)."""
    import grpc
    from armada_client.armada import submit_pb2
    from armada_client.client import ArmadaClient

    from support.pods import item, pod, python, submit_one
    from support.waiting import wait_for_state

    with grpc.insecure_channel(dev_server) as channel:
        client = ArmadaClient(channel)
        client.create_queue(client.create_queue_request(name="binoculars-example", priority_factor=1))
        job_id = submit_one(client, "binoculars-example", "logs", item(pod(python("print('hello from the pod')"))))
        wait_for_state(client, job_id, submit_pb2.SUCCEEDED, timeout=60)
    host, port = dev_server.rsplit(":", 1)
    script = pathlib.Path(armada_tools["ARMADA_PYTHON_CLIENT"], "examples", "binoculars.py")
    env = {**os.environ, "BINOCULARS_SERVER": host, "BINOCULARS_PORT": port, "JOB_ID": job_id, "DISABLE_SSL": "1"}
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "hello from the pod" in run.stdout


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


@pytest.fixture(scope="module")
def e2e_armadactl_results(armada_tools, tmp_path_factory) -> dict[str, str]:
    """Armada's e2e armadactl tests, run once against `armada-flyte dev` on localhost:50051, their fixed address."""
    binary = armada_tools.get("ARMADA_E2E_ARMADACTL_TEST", "")
    if not binary or not os.access(binary, os.X_OK):
        missing_part(f"Armada's e2e armadactl test binary was not built ({binary or 'no path'})")
    taken = port_in_use(E2E_ARMADACTL_PORT)
    if taken:
        missing_part(
            f"{taken} is in use: Armada's e2e armadactl tests dial localhost:{E2E_ARMADACTL_PORT} and can't be "
            "pointed elsewhere; stop whatever listens there (another `armada-flyte dev`?) and run again"
        )
    with running_dev_server(E2E_ARMADACTL_PORT):
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
def test_armadas_e2e_armadactl_test(test, e2e_armadactl_results):
    expected = E2E_ARMADACTL_TESTS[test]
    assert test in e2e_armadactl_results, f"{test} did not run: {sorted(e2e_armadactl_results)}"
    failure = e2e_armadactl_results[test]
    if expected is PASSES:
        assert failure == "", failure
    else:
        assert failure, f"{test} now passes: mark it as passing here and in docs/embedded-server.md"
        assert f"armadactl_test.go:{expected.line}:" in failure, f"{test} failed elsewhere: {failure}"


def test_every_e2e_armadactl_test_has_an_expectation(e2e_armadactl_results):
    assert set(e2e_armadactl_results) == set(E2E_ARMADACTL_TESTS)
