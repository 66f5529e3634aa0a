"""When the node agent stops, the pods it ran cannot outlive it (their processes end with it): a kubelet's pods
would keep running, ours are reported failed, saying why, and Armada fails the job; the agent started again
takes new pods as before."""

from __future__ import annotations

from armada_client.armada import submit_pb2

from support.pods import item, pod, python, submit_one, unique
from support.real_armada import bed_script
from support.real_kubernetes import bed_log, job_pod
from support.waiting import job_error, wait_for_state, wait_until

QUEUE = "e2e-test-queue"
TIMEOUT = 180.0


def test_a_pod_running_when_the_agent_stops_fails_saying_so_and_the_agent_runs_pods_again(armada, kubernetes_bed):
    job_set = unique("agent-restart")
    job_id = submit_one(armada, QUEUE, job_set, item(pod(python("import time; time.sleep(300)"))))
    wait_for_state(armada, job_id, submit_pb2.RUNNING, timeout=TIMEOUT)
    restarted = bed_script("restart", "node-agent", bed=kubernetes_bed, timeout=300)
    assert restarted.returncode == 0, restarted.stderr
    wait_for_state(armada, job_id, submit_pb2.FAILED, timeout=TIMEOUT)
    assert "the node agent stopped while the pod ran" in job_error(armada, job_id)
    assert wait_until(lambda: (job_pod(kubernetes_bed, job_id) or {}).get("status", {}).get("reason"), 30) == (
        "NodeAgentStopped"
    )
    after = submit_one(armada, QUEUE, job_set, item(pod(python("print('after the restart')"))))
    try:
        wait_for_state(armada, after, submit_pb2.SUCCEEDED, timeout=TIMEOUT)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{bed_log(kubernetes_bed, 'node-agent')}") from None
