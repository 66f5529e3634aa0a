"""`cpuShares: true` in the cluster file: each container's CPU priority follows its cpu request, as
Kubernetes' cpu.shares does (request x 1024, here as the nearest nice level, the session's autogroup
included), so many small pods can't crowd out the rest of the machine."""

from __future__ import annotations

import json

import pytest
from armada_client.armada import submit_pb2

from support.pods import item, node_set, pod, python, submit_one
from support.waiting import wait_for_state

pytestmark = pytest.mark.embedded_only

REPORT = (
    "import json, os\n"
    "try:\n    group = open('/proc/self/autogroup').read().split()[-1]\nexcept OSError:\n    group = None\n"
    "print(json.dumps({'nice': os.getpriority(os.PRIO_PROCESS, 0), 'autogroup': group, 'env': sorted(os.environ)}))"
)


def _report(armada, client, cpu: str) -> dict:
    job_id = submit_one(client, "conformance", "shares", item(pod(python(REPORT), cpu=cpu)))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    return json.loads(next(line for line in armada.logs(job_id) if line.startswith("{")))


def test_a_small_request_runs_at_a_low_priority_with_cpu_shares(own_armada) -> None:
    armada, client = own_armada({"cpuShares": True, "node_sets": [node_set("amd64", cpu="4")]})
    report = _report(armada, client, "50m")
    assert report["nice"] == 13
    assert report["autogroup"] in (None, "13")
    assert "ARMADA_FLYTE_CPU_NICE" not in report["env"]


def test_without_cpu_shares_pods_run_at_normal_priority(own_armada) -> None:
    armada, client = own_armada({"node_sets": [node_set("amd64", cpu="4")]})
    assert _report(armada, client, "50m")["nice"] == 0
