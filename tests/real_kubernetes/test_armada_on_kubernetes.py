"""Armada's own executor on a real Kubernetes API server: the pods meet Kubernetes, our node agent is only the
kubelet. A job submitted to Armada becomes a pod Armada's executor creates; kube-scheduler binds it to a
node the agent registered (the one Armada's scheduler chose); the agent runs it and `kubectl logs` reads it."""

from __future__ import annotations

import os
import subprocess
import sys

from armada_client.armada import submit_pb2

from support.pods import arm64_pod, item, pod, python, submit_one, unique
from support.real_kubernetes import bed_log, job_pod, kubectl, pod_events
from support.waiting import job_error, wait_for_state, wait_until

QUEUE = "e2e-test-queue"
TIMEOUT = 180.0


def run_to_end(armada, bed, spec, state=submit_pb2.SUCCEEDED) -> str:
    job_id = submit_one(armada, QUEUE, unique("kube"), item(spec))
    try:
        wait_for_state(armada, job_id, state, timeout=TIMEOUT)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{bed_log(bed, 'executor')}\n{bed_log(bed, 'node-agent')}") from None
    return job_id


def test_a_job_runs_on_an_agent_node_that_kube_scheduler_bound_it_to(armada, kubernetes_bed):
    job_id = run_to_end(armada, kubernetes_bed, pod(python("print('hello from a kubernetes pod')")))
    found = wait_until(lambda: job_pod(kubernetes_bed, job_id), 30, f"the pod of job {job_id}")
    assert found["spec"]["nodeName"] in {"amd64-0", "amd64-1"}
    scheduled = [e for e in pod_events(kubernetes_bed, found["metadata"]["name"]) if e["reason"] == "Scheduled"]
    assert [e.get("reportingComponent") or e["source"].get("component") for e in scheduled] == ["default-scheduler"]
    assert found["status"]["phase"] == "Succeeded"
    assert found["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0


def test_kubectl_logs_of_the_jobs_pod_shows_the_tasks_output(armada, kubernetes_bed):
    job_id = run_to_end(armada, kubernetes_bed, pod(python("print('line one'); print('line two')")))
    logs = kubectl(kubernetes_bed, "logs", "-n", "default", f"armada-{job_id}-0")
    assert logs.stdout.splitlines() == ["line one", "line two"]


def test_armada_flyte_logs_reads_the_jobs_log_from_binoculars_while_its_pod_exists(armada, kubernetes_bed):
    """`armada-flyte logs JOB_ID` against real Armada: Binoculars (the bed's, logged in as the bed's user)
    reads the pod's log through the API server and the kubelet (our node agent)."""
    job_id = run_to_end(armada, kubernetes_bed, pod(python("print('read by binoculars'); print('second')")))
    wait_until(lambda: job_pod(kubernetes_bed, job_id), 30, f"the pod of job {job_id}")
    names = (
        "ARMADA_URL",
        "ARMADA_FLYTE_BINOCULARS_URL",
        "ARMADA_FLYTE_AUTH_USERNAME",
        "ARMADA_FLYTE_AUTH_PASSWORD_FILE",
    )
    env = {**os.environ, **{name: kubernetes_bed[name] for name in names}}
    done = subprocess.run(
        [sys.executable, "-m", "armada_flyte.admin.cli", "logs", job_id],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr + bed_log(kubernetes_bed, "binoculars")
    assert done.stdout.splitlines()[-2:] == ["read by binoculars", "second"], done.stdout


def test_an_arm64_job_lands_on_an_arm64_node_by_kube_schedulers_binding(armada, kubernetes_bed):
    job_id = run_to_end(armada, kubernetes_bed, arm64_pod(python("print('on arm64')")))
    found = wait_until(lambda: job_pod(kubernetes_bed, job_id), 30, f"the pod of job {job_id}")
    assert found["spec"]["nodeName"].startswith("arm64-")
    node = kubectl(kubernetes_bed, "get", "node", found["spec"]["nodeName"], "-o", "jsonpath={.metadata.labels}")
    assert '"kubernetes.io/arch":"arm64"' in node.stdout


def test_a_failing_container_fails_the_job_with_its_exit_code_as_the_kubelet_reports_it(armada, kubernetes_bed):
    job_id = run_to_end(armada, kubernetes_bed, pod(python("import sys; sys.exit(3)")), state=submit_pb2.FAILED)
    assert "failed with exit code 3" in job_error(armada, job_id)


def test_a_cancelled_job_stops_its_pod_and_the_agent_finishes_the_deletion(armada, kubernetes_bed):
    """Armada's executor deletes the pod of a cancelled run; the pod stays Terminating until its kubelet has
    stopped the containers and deleted it with grace 0, as the node agent does."""
    job_set = unique("kube-cancel")
    job_id = submit_one(armada, QUEUE, job_set, item(pod(python("import time; time.sleep(300)"))))
    wait_for_state(armada, job_id, submit_pb2.RUNNING, timeout=TIMEOUT)
    wait_until(lambda: job_pod(kubernetes_bed, job_id), 30, f"the pod of job {job_id}")
    armada.cancel_jobs(queue=QUEUE, job_set_id=job_set, job_id=job_id)
    wait_for_state(armada, job_id, submit_pb2.CANCELLED, timeout=TIMEOUT)
    wait_until(lambda: job_pod(kubernetes_bed, job_id) is None, 60, f"the pod of job {job_id} to be deleted")
