"""`cpuShares: true` in the cluster file: each container's CPU priority follows its cpu request, as
Kubernetes' cpu.shares does (request x 1024, here as the nearest nice level, the session's autogroup
included), so many small pods can't crowd out the rest of the machine."""

from __future__ import annotations

import json

import pytest
from armada_client.armada import submit_pb2

from armada_flyte.embedded.executors.cpu_shares import cpu_nice

from support.pods import item, node_group, pod, python, submit_one
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


@pytest.mark.pure
def test_nice_levels_follow_kubernetes_shares() -> None:
    assert cpu_nice(1000) == 0 and cpu_nice(4000) == 0  # never above normal priority
    assert cpu_nice(100) == 10  # 102 shares; nice 10 weighs 110
    assert cpu_nice(50) == 13  # 51 shares; nice 13 weighs 56
    assert cpu_nice(0) == 19  # no request: Kubernetes' minimum of 2 shares


def test_a_small_request_runs_at_a_low_priority_with_cpu_shares(own_armada) -> None:
    armada, client = own_armada({"cpuShares": True, "node_groups": [node_group("amd64", cpu="4")]})
    report = _report(armada, client, "50m")
    assert report["nice"] == 13
    assert report["autogroup"] in (None, "13")
    assert "ARMADA_FLYTE_CPU_NICE" not in report["env"]


def test_without_cpu_shares_pods_run_at_normal_priority(own_armada) -> None:
    armada, client = own_armada({"node_groups": [node_group("amd64", cpu="4")]})
    assert _report(armada, client, "50m")["nice"] == 0
