"""Armada's own client-facing tests, unchanged, against `armada-flyte dev`: the YAML cases of its
`testsuite` command, and its Python client's examples and integration tests.

The tools and cases come from Armada's Go module at the version `scripts/build-armada-tools.sh`
pins (built once per version, cached). Each case must do what this file says it does: pass, or
fail for the reason given. A case that starts passing fails here too, so this list (and
docs/embedded-server.md) stays true.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

from support.armada_tools import CLI, ROOT
from support.real_parts import missing_part

PASSES = None
"""The expectation for a case that must pass."""

# Why a case can't pass against the embedded server, for each that doesn't.
NEEDS_IMAGES = "needs the image's own programs (the process executor runs commands on the host)"
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
    "basic/failure_errimagepull": NEEDS_IMAGES,
    "basic/failure_namespace": PASSES,
    "basic/gang": PASSES,
    "basic/ingress": NEEDS_IMAGES + " (busybox nc); no ingress-info event either",
    "basic/jobset_cancel_by_set_1x5": PASSES,
    "basic/jobset_cancel_inactive": PASSES,
    "basic/priorityclass_default": PASSES,
    "basic/service_headless": PASSES,
    "basic/submit_1x1": PASSES,
    "basic/submit_2x3": PASSES,
    "basic/submit_fileshare_1x1": PASSES,
    "basic/submit_random_clientid": PASSES,
    "categorization/user_error": PASSES,
    "gpu/submit_gpu_1x1": NEEDS_GPUS,
    "gpu/submit_gpu_2x3": NEEDS_GPUS,
    "node/node_cancel_by_name_1x5": PASSES,
    "node/node_preempt_by_name_1x5": PASSES,
    "performance/submit_10x100": PASSES,
    "performance/submit_1x1K": PASSES,
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

NEEDS_KUBECTL = {"basic/gang", "basic/service_headless"}
"""Their pods run the host's kubectl against the embedded cluster's Kubernetes API."""

# Never run here: they would take the shared machine with them (see scripts/armada-testsuite.sh).
UNSAFE_CASES = {
    "basic/failure_oom_1x1": "no memory limit on host processes: it grows until the kernel's OOM killer acts",
    "categorization/oom": "writes 256 MiB into the host's /dev/shm",
    "performance/submit_load_1x500": "runs 500 CPU burners (stress-ng) at once",
    "performance/submit_load_5x100": "runs 500 CPU burners (stress-ng) at once",
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


def _case_names(folder: pathlib.Path) -> set[str]:
    return {f"{path.parent.name}/{path.stem}" for path in folder.glob("*/*.yaml")}


def test_every_case_of_the_pinned_version_has_an_expectation(armada_tools):
    cases = _case_names(pathlib.Path(armada_tools["ARMADA_TESTCASES"]))
    assert cases == set(TESTSUITE_CASES) | set(UNSAFE_CASES)
    examples = {path.stem for path in pathlib.Path(armada_tools["ARMADA_PYTHON_CLIENT"], "examples").glob("*.py")}
    assert examples == set(PYTHON_CLIENT_EXAMPLES)


@pytest.fixture(scope="module")
def testsuite_results(armada_tools, tmp_path_factory) -> dict[str, str]:
    """Run every safe case once (as Armada's CI does, a folder at a time): case -> "" or its failure."""
    out = tmp_path_factory.mktemp("armada-testsuite")
    env = {**os.environ, "OUT_DIR": str(out), "ARMADA_FLYTE_CMD": str(CLI)}
    env.pop("ARMADA_URL", None)
    run = subprocess.run(
        [str(ROOT / "scripts" / "armada-testsuite.sh")], env=env, capture_output=True, text=True, timeout=900
    )
    results = {}
    for report in out.glob("*.junit.xml"):
        folder = report.name.split(".")[0].split("__")[0]  # <folder> or, for a case run alone, <folder>__<case>
        for case in ElementTree.parse(report).iter("testcase"):
            failure = case.find("failure")
            results[f"{folder}/{case.get('name')}"] = "" if failure is None else (failure.get("message") or "failed")
    assert results, f"the testsuite ran no case: {run.stderr[-3000:]}"
    return results


@pytest.mark.parametrize("case", sorted(TESTSUITE_CASES))
def test_armadas_testsuite_case(case, testsuite_results):
    if case in NEEDS_KUBECTL and shutil.which("kubectl") is None:
        missing_part("kubectl is not installed (scripts/install-test-parts.sh installs Debian's kubernetes-client)")
    why_not = TESTSUITE_CASES[case]
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
