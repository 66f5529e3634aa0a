"""CPU pinning in the process pod runner follows the kubelet's static CPU manager policy.

Every Armada pod is Guaranteed (requests == limits). Under the static policy
(kubernetes pkg/kubelet/cm/cpumanager/policy_static.go) a Guaranteed container with a whole
number of CPUs gets CPUs of its own; any other runs in the shared pool, on every CPU, its limit a
CFS quota. So a 250m container is not pinned to one CPU, and whole-CPU containers running at the
same time get different CPUs.
"""

from __future__ import annotations

import os
import pathlib

import pytest
from armada_client.armada import submit_pb2

from support.pods import item, pod, python, submit_one
from support.waiting import wait_for_state, wait_until

AFFINITY = "import os; print('cpus', sorted(os.sched_getaffinity(0)), flush=True)"


def _affinity(armada, job_id: str) -> list[int]:
    line = wait_until(
        lambda: next((line for line in armada.logs(job_id) if line.startswith("cpus ")), None),
        what=f"job {job_id} to print its CPUs",
    )
    return [int(cpu) for cpu in line.split(" ", 1)[1].strip("[]").split(",")]


needs_two_cpus = pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="pinning needs Linux and a host with at least 2 CPUs",
)


@pytest.mark.embedded_only
@needs_two_cpus
def test_a_250m_pod_runs_on_every_cpu(embedded_armada, client, queue, job_set) -> None:
    job_id = submit_one(client, queue, job_set, item(pod(python(AFFINITY), cpu="250m")))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    assert _affinity(embedded_armada, job_id) == sorted(os.sched_getaffinity(0))


@pytest.mark.embedded_only
@needs_two_cpus
def test_two_one_cpu_pods_at_once_get_one_cpu_each(embedded_armada, client, queue, job_set, pods_tmp_path) -> None:
    go = pods_tmp_path / "go"
    wait_for_go = f"{AFFINITY}\nimport os, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.01)"
    jobs = [submit_one(client, queue, job_set, item(pod(python(wait_for_go), cpu="1"))) for _ in range(2)]
    try:
        first, second = (_affinity(embedded_armada, job_id) for job_id in jobs)
    finally:
        pathlib.Path(go).touch()
    for job_id in jobs:
        wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    assert len(first) == 1 and len(second) == 1 and first != second
    assert set(first + second) <= set(os.sched_getaffinity(0))
