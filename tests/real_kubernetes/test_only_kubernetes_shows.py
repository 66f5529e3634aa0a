"""What only a real Kubernetes API server shows: its own checks of the pod (a spec it refuses, a service account
or namespace that is not there), Secrets read from it by reference, and what the kubelet reports (the
activeDeadlineSeconds reason, OOMKilled, a container waiting for a missing Secret), through Armada's own
executor to the user."""

from __future__ import annotations

import base64
import json
import subprocess
import uuid

from armada_client.armada import submit_pb2
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core

from support.pods import ARCH, item, pod, python, submit_one, unique
from support.real_kubernetes import bed_log, job_pod, kubectl
from support.waiting import job_error, wait_for_state, wait_until

QUEUE = "e2e-test-queue"
TIMEOUT = 180.0


JOB_SET = unique("kube-only")


def submitted(armada, spec: core.PodSpec, namespace: str = "default") -> str:
    return submit_one(armada, QUEUE, JOB_SET, item(spec, namespace=namespace))


def ended(armada, bed, job_id: str, state: int) -> str:
    """Wait for the job's end in `state`; its error (empty for a success)."""
    try:
        wait_for_state(armada, job_id, state, timeout=TIMEOUT)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{bed_log(bed, 'executor')}\n{bed_log(bed, 'node-agent')}") from None
    return "" if state == submit_pb2.SUCCEEDED else job_error(armada, job_id)


def test_a_pod_spec_the_api_server_refuses_fails_the_job_with_the_api_servers_words(armada, kubernetes_bed):
    spec = pod(python("print('never')"))
    spec.containers[0].name = "Main_Task"  # Armada's server takes it; Kubernetes wants an RFC 1123 label
    error = ended(armada, kubernetes_bed, submitted(armada, spec), submit_pb2.FAILED)
    assert 'spec.containers[0].name: Invalid value: "Main_Task": a lowercase RFC 1123 label' in error


def test_a_service_account_that_is_not_there_is_refused_by_the_api_server(armada, kubernetes_bed):
    spec = pod(python("print('never')"))
    spec.serviceAccountName = "no-such-account"
    error = ended(armada, kubernetes_bed, submitted(armada, spec), submit_pb2.FAILED)
    assert (
        'error looking up service account default/no-such-account: serviceaccount "no-such-account" not found' in error
    )


def test_a_namespace_that_is_not_there_fails_the_job_at_once(armada, kubernetes_bed):
    error = ended(armada, kubernetes_bed, submitted(armada, pod(), namespace="no-such-ns"), submit_pb2.FAILED)
    assert 'namespaces "no-such-ns" not found' in error


def test_a_job_pinned_to_arm64_without_the_toleration_is_refused_by_the_taint_with_the_reason(armada, kubernetes_bed):
    job_id = submitted(armada, pod(node_selector={ARCH: "arm64"}))
    ended(armada, kubernetes_bed, job_id, submit_pb2.REJECTED)
    assert "taint kubernetes.io/arch=arm64:NoSchedule not tolerated" in job_error(armada, job_id)


def test_secrets_are_read_by_reference_from_a_kubernetes_secret(armada, kubernetes_bed):
    name, value, filed = f"kube-only-{uuid.uuid4().hex[:6]}", uuid.uuid4().hex, uuid.uuid4().hex
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"token": base64.b64encode(value.encode()).decode(), "file": base64.b64encode(filed.encode()).decode()},
    }
    _apply(kubernetes_bed, secret)
    spec = pod(python("import os; print(os.environ['TOKEN']); print(open('/etc/creds/file').read())"))
    reference = core.SecretKeySelector(localObjectReference=core.LocalObjectReference(name=name), key="token")
    spec.containers[0].env.append(core.EnvVar(name="TOKEN", valueFrom=core.EnvVarSource(secretKeyRef=reference)))
    spec.containers[0].volumeMounts.append(core.VolumeMount(name="creds", mountPath="/etc/creds"))
    spec.volumes.append(
        core.Volume(name="creds", volumeSource=core.VolumeSource(secret=core.SecretVolumeSource(secretName=name)))
    )
    job_id = submitted(armada, spec)
    ended(armada, kubernetes_bed, job_id, submit_pb2.SUCCEEDED)
    logs = kubectl(kubernetes_bed, "logs", f"armada-{job_id}-0").stdout.splitlines()
    assert logs == [value, filed]


def test_a_missing_secret_keeps_the_container_waiting_as_a_kubelet_does(armada, kubernetes_bed):
    spec = pod(python("print('never')"))
    reference = core.SecretKeySelector(localObjectReference=core.LocalObjectReference(name="no-such-secret"), key="k")
    spec.containers[0].env.append(core.EnvVar(name="K", valueFrom=core.EnvVarSource(secretKeyRef=reference)))
    job_id = submitted(armada, spec)

    def waiting() -> dict:
        found = job_pod(kubernetes_bed, job_id) or {}
        statuses = found.get("status", {}).get("containerStatuses") or [{}]
        return (
            statuses[0].get("state", {}).get("waiting", {}).get("reason") == "CreateContainerConfigError"
            and statuses[0]
        )

    status = wait_until(waiting, TIMEOUT, f"the container of job {job_id} to wait for its Secret")
    assert status["state"]["waiting"]["message"] == 'secret "no-such-secret" not found'
    armada.cancel_jobs(queue=QUEUE, job_set_id=JOB_SET, job_id=job_id)


def test_a_pod_waiting_for_its_secret_starts_once_the_secret_is_created(armada, kubernetes_bed):
    """The kubelet tries a missing Secret again; the node agent does too (every few seconds)."""
    name, value = f"late-{uuid.uuid4().hex[:6]}", uuid.uuid4().hex
    spec = pod(python("import os; print(os.environ['LATE'])"))
    reference = core.SecretKeySelector(localObjectReference=core.LocalObjectReference(name=name), key="value")
    spec.containers[0].env.append(core.EnvVar(name="LATE", valueFrom=core.EnvVarSource(secretKeyRef=reference)))
    job_id = submitted(armada, spec)

    def waiting_reason() -> str:
        found = job_pod(kubernetes_bed, job_id) or {}
        statuses = found.get("status", {}).get("containerStatuses") or [{}]
        return statuses[0].get("state", {}).get("waiting", {}).get("reason", "")

    wait_until(lambda: waiting_reason() == "CreateContainerConfigError", TIMEOUT, f"job {job_id} to wait for {name}")
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "default"}}
    _apply(kubernetes_bed, {**secret, "data": {"value": base64.b64encode(value.encode()).decode()}})
    ended(armada, kubernetes_bed, job_id, submit_pb2.SUCCEEDED)
    assert kubectl(kubernetes_bed, "logs", f"armada-{job_id}-0").stdout.splitlines() == [value]


def test_active_deadline_seconds_fails_the_pod_with_the_kubelets_reason(armada, kubernetes_bed):
    spec = pod(python("import time; time.sleep(120)"))
    spec.activeDeadlineSeconds = 3
    job_id = submitted(armada, spec)
    assert "Pod was active on the node longer than the specified deadline" in ended(
        armada, kubernetes_bed, job_id, submit_pb2.FAILED
    )
    assert job_pod(kubernetes_bed, job_id)["status"]["reason"] == "DeadlineExceeded"


def test_a_container_over_its_memory_limit_is_oomkilled_as_a_kubelet_reports_it(armada, kubernetes_bed):
    spec = pod(python("x = bytearray(400 * 1024 * 1024); import time; time.sleep(5)"), memory="64Mi")
    job_id = submitted(armada, spec)
    error = ended(armada, kubernetes_bed, job_id, submit_pb2.FAILED)
    assert "Container main failed with exit code 137 because OOMKilled" in error
    terminated = job_pod(kubernetes_bed, job_id)["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["reason"], terminated["exitCode"]) == ("OOMKilled", 137)


def _apply(bed: dict[str, str], manifest: dict) -> None:
    applied = subprocess.run(
        ["kubectl", "--kubeconfig", bed["KUBECONFIG"], "apply", "-f", "-"],
        input=json.dumps(manifest),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert applied.returncode == 0, applied.stderr


def test_a_task_whose_pod_the_api_server_refuses_fails_with_the_api_servers_words(kubernetes_bed):
    """Through the connector, as Flyte sees it: the backend's service account does not exist in the namespace."""
    from flyteidl2.core.execution_pb2 import TaskExecution

    import armada_flyte
    from armada_flyte.connector.service import ArmadaConnector

    from support.armada_templates import execution_metadata, python_template, run, wait_for
    from support.real_armada import ensure_queues

    ensure_queues(kubernetes_bed["ARMADA_URL"], ("flyte",))
    armada_flyte.configure(armada_url=kubernetes_bed["ARMADA_URL"], node_groups_preset="embedded")
    connector = ArmadaConnector()
    metadata = execution_metadata(run=unique("refused"), action="a0")
    metadata.k8s_service_account = "no-such-runner"
    done = {TaskExecution.SUCCEEDED, TaskExecution.FAILED, TaskExecution.RETRYABLE_FAILED}

    async def scenario():
        meta = await connector.create(python_template("print('never')"), "s3://b/raw", task_execution_metadata=metadata)
        return await wait_for(connector, meta, done, timeout=TIMEOUT)

    try:
        resource = run(scenario())
    finally:
        run(connector.close())
    assert resource.phase in (TaskExecution.FAILED, TaskExecution.RETRYABLE_FAILED)
    assert 'serviceaccount "no-such-runner" not found' in resource.message, resource.message
