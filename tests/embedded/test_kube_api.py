"""The embedded cluster's read-only Kubernetes API, over real HTTP on 127.0.0.1, and kubectl on it.

What it must look like is Kubernetes' core v1 API: discovery documents, NodeList/PodList/...
objects, `labelSelector` semantics (k8s.io/apimachinery/pkg/labels/selector.go) and `Status`
errors. The pods and Services must be the ones Armada's executor would have created, with its
labels and annotations (internal/executor/util/kubernetes_object.go) and its Service naming
(internal/server/submit/conversion/conversions.go). Armada's own testsuite lists nodes through
it with client-go (tests/embedded/test_armadas_own_tests.py, node/* cases).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request

import pytest
from armada_client.armada import submit_pb2
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core

from support.pods import item, pod, python, sleeper, submit_one
from support.real_parts import missing_part
from support.waiting import state_of, wait_for_state, wait_until

pytestmark = pytest.mark.embedded_only

NAMESPACE = "personal-anonymous"
CLUSTER = {
    "executor": "local-cluster",
    "namespaces": [NAMESPACE],
    "node_sets": [
        {
            "name": "plain",
            "nodes": 2,
            "labels": {"kubernetes.io/arch": "amd64", "tier": "a"},
            "allocatable": {"cpu": "4", "memory": "8Gi"},
        },
        {
            "name": "node-ops",
            "nodes": 1,
            "labels": {"kubernetes.io/arch": "amd64", "armadaproject.io/node-pool": "node-ops", "tier": "b"},
            "taints": [{"key": "node-tests", "value": "true", "effect": "NoSchedule"}],
            "allocatable": {"cpu": "2", "memory": "4Gi"},
        },
    ],
}


@pytest.fixture
def armada(own_armada):
    server, client = own_armada(CLUSTER)
    return server, client


def get(server, path: str, **query: str) -> tuple[int, dict]:
    url = server.kube_api_url + path + (f"?{urllib.parse.urlencode(query)}" if query else "")
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def names(answer: dict) -> list[str]:
    return [o["metadata"]["name"] for o in answer["items"]]


def test_discovery_names_the_core_resources_it_serves(armada):
    server, _ = armada
    assert get(server, "/version")[1]["major"] == "1"
    assert get(server, "/api")[1]["versions"] == ["v1"]
    assert get(server, "/apis")[1] == {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
    resources = {r["name"]: r for r in get(server, "/api/v1")[1]["resources"]}
    assert set(resources) == {"namespaces", "nodes", "pods", "pods/log", "services"}
    assert resources["pods"]["namespaced"] and not resources["nodes"]["namespaced"]


def test_nodes_carry_the_cluster_files_labels_and_taints(armada):
    server, _ = armada
    status, answer = get(server, "/api/v1/nodes", labelSelector="armadaproject.io/node-pool=node-ops")
    assert status == 200 and answer["kind"] == "NodeList"
    (node,) = answer["items"]
    assert node["metadata"]["name"] == "node-ops-0"
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "node-ops-0"
    assert node["spec"]["taints"] == [{"key": "node-tests", "value": "true", "effect": "NoSchedule"}]
    assert node["status"]["allocatable"]["cpu"] == "2"
    assert get(server, "/api/v1/nodes/plain-1")[1]["metadata"]["labels"]["tier"] == "a"


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("tier=a", ["plain-0", "plain-1"]),
        ("tier==b", ["node-ops-0"]),
        ("tier!=a", ["node-ops-0"]),
        ("tier in (a, b),kubernetes.io/hostname notin (plain-0)", ["plain-1", "node-ops-0"]),
        ("armadaproject.io/node-pool", ["node-ops-0"]),
        ("!armadaproject.io/node-pool", ["plain-0", "plain-1"]),
        ("missing!=x", ["plain-0", "plain-1", "node-ops-0"]),  # != also matches nodes without the key
        ("", ["plain-0", "plain-1", "node-ops-0"]),
    ],
)
def test_label_selectors_select_as_kubernetes_does(armada, selector, expected):
    server, _ = armada
    assert names(get(server, "/api/v1/nodes", labelSelector=selector)[1]) == expected


@pytest.mark.parametrize("selector", ["tier in a", "tier=a,", "tier in (a", "=a", "tier=a b", "-bad=x"])
def test_a_selector_that_does_not_parse_is_a_bad_request(armada, selector):
    server, _ = armada
    status, answer = get(server, "/api/v1/nodes", labelSelector=selector)
    assert (status, answer["kind"], answer["reason"], answer["code"]) == (400, "Status", "BadRequest", 400)
    status, answer = get(server, "/api/v1/pods", fieldSelector="status.phase=Running")
    assert (status, answer["message"]) == (400, 'field label not supported: "status.phase"')


def test_namespaces_are_kubernetes_own_and_the_cluster_files(armada):
    server, _ = armada
    listed = names(get(server, "/api/v1/namespaces")[1])
    assert {"default", "kube-system", NAMESPACE} <= set(listed)
    status, answer = get(server, "/api/v1/namespaces/nope")
    assert (status, answer["reason"], answer["message"]) == (404, "NotFound", 'namespaces "nope" not found')


def test_a_running_pod_is_listed_with_armadas_metadata(armada):
    server, client = armada
    request_item = item(sleeper(cpu="100m"), namespace=NAMESPACE, annotations={"team": "ml"})
    request_item.labels["app"] = "demo"
    job_id = submit_one(client, "conformance", "kube-view", request_item)
    wait_for_state(client, job_id, submit_pb2.RUNNING)

    answer = get(server, f"/api/v1/namespaces/{NAMESPACE}/pods", labelSelector=f"armada_job_id={job_id}")[1]
    (listed,) = answer["items"]
    metadata = listed["metadata"]
    run_id = client.get_job_details([job_id]).job_details[job_id].latest_run_id
    assert metadata["name"] == f"armada-{job_id}-0" and metadata["namespace"] == NAMESPACE
    assert metadata["uid"] == run_id  # what a fieldRef to metadata.uid reads in the pod
    assert metadata["labels"] == {
        "app": "demo",
        "armada_job_id": job_id,
        "armada_job_run_id": run_id,
        "armada_queue_id": "conformance",
        "armada_pod_number": "0",
        "armada_pod_count": "1",
    }
    assert metadata["annotations"] == {"team": "ml", "armada_jobset_id": "kube-view", "armada_owner": "anonymous"}
    assert listed["status"]["phase"] == "Running" and listed["status"]["podIP"] == "127.0.0.1"
    assert listed["spec"]["nodeName"] == server.job(job_id).node
    assert get(server, f"/api/v1/namespaces/default/pods/{metadata['name']}")[0] == 404  # not in default

    client.cancel_jobs("conformance", "kube-view", job_id)
    wait_for_state(client, job_id, submit_pb2.CANCELLED)
    # the executor deletes a cancelled job's pod
    wait_until(lambda: not get(server, "/api/v1/pods", labelSelector=f"armada_job_id={job_id}")[1]["items"])


def test_kubectl_prints_pods_with_their_status(armada):
    server, client = armada
    kubectl = _kubectl()
    job_id = submit_one(client, "conformance", "kube-view", item(sleeper(cpu="100m"), namespace=NAMESPACE))
    wait_for_state(client, job_id, submit_pb2.RUNNING)
    env = {**os.environ, "KUBECONFIG": str(server.kubeconfig)}
    shown = subprocess.run(
        [kubectl, "get", "po", "-n", NAMESPACE, "-o", "wide"], env=env, capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0, shown.stderr
    header, row = shown.stdout.splitlines()
    assert header.split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]
    assert row.split()[:4] == [f"armada-{job_id}-0", "1/1", "Running", "0"]
    assert row.split()[5:] == ["127.0.0.1", server.job(job_id).node]


def test_a_finished_pod_stays_for_a_while_with_its_phase(armada):
    server, client = armada
    job_id = submit_one(client, "conformance", "kube-view", item(pod(["true"]), namespace=NAMESPACE))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    (listed,) = get(server, "/api/v1/pods", fieldSelector=f"metadata.name=armada-{job_id}-0")[1]["items"]
    assert listed["status"]["phase"] == "Succeeded"


def _with_service(
    spec: core.PodSpec, ports: list[int], service_ports: list[int], kind: int
) -> submit_pb2.JobSubmitRequestItem:
    spec.containers[0].ports.extend(core.ContainerPort(containerPort=p, protocol="TCP") for p in ports)
    request_item = item(spec, namespace=NAMESPACE)
    request_item.services.append(submit_pb2.ServiceConfig(type=kind, ports=service_ports))
    return request_item


def test_a_headless_service_is_made_for_a_services_entry(armada):
    server, client = armada
    request_item = _with_service(sleeper(cpu="100m"), [1000, 2000], [1000], submit_pb2.ServiceType.Headless)
    job_id = submit_one(client, "conformance", "kube-view", request_item)
    wait_for_state(client, job_id, submit_pb2.RUNNING)
    status, service = get(server, f"/api/v1/namespaces/{NAMESPACE}/services/armada-{job_id}-0-service-0")
    assert status == 200
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["selector"] == {"armada_job_id": job_id}
    assert [(p["name"], p["port"]) for p in service["spec"]["ports"]] == [("main-1000", 1000)]
    assert service["metadata"]["labels"] == {"armada_job_id": job_id, "armada_queue_id": "conformance"}


def test_a_services_entry_naming_no_offered_port_makes_no_service(armada):
    server, client = armada
    request_item = _with_service(sleeper(cpu="100m"), [1000], [3000], submit_pb2.ServiceType.Headless)
    job_id = submit_one(client, "conformance", "kube-view", request_item)
    wait_for_state(client, job_id, submit_pb2.RUNNING)
    assert get(server, "/api/v1/services", labelSelector=f"armada_job_id={job_id}")[1]["items"] == []


def test_writes_and_watches_are_refused(armada):
    server, _ = armada
    request = urllib.request.Request(server.kube_api_url + "/api/v1/nodes/plain-0", method="DELETE")
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=10)
    assert raised.value.code == 405
    assert get(server, "/api/v1/pods", watch="true")[0] == 405
    assert get(server, "/api/v1/secrets")[0] == 404


def test_the_kubeconfig_goes_where_asked_or_into_the_state_dir(own_armada, tmp_path):
    asked = tmp_path / "asked" / "config"
    server, _ = own_armada(CLUSTER, kubeconfig=asked)
    assert server.kubeconfig == asked
    assert json.loads(asked.read_text())["clusters"][0]["cluster"]["server"] == server.kube_api_url
    server, _ = own_armada(CLUSTER, state_dir=tmp_path / "state")
    assert server.kubeconfig == tmp_path / "state" / "kubeconfig"
    server, _ = own_armada(CLUSTER)
    temporary = server.kubeconfig
    assert temporary is not None and temporary.exists()
    server.stop()
    assert not temporary.exists()


def _kubectl() -> str:
    found = shutil.which("kubectl")
    if found is None:
        missing_part("kubectl is not installed (scripts/install-test-parts.sh installs Debian's kubernetes-client)")
    return str(found)


def test_kubectl_reads_nodes_through_the_kubeconfig(armada):
    server, _ = armada
    kubectl = _kubectl()
    env = {**os.environ, "KUBECONFIG": str(server.kubeconfig)}
    listed = subprocess.run(
        [kubectl, "get", "nodes", "-l", "armadaproject.io/node-pool=node-ops", "-o", "name"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (listed.returncode, listed.stdout.strip()) == (0, "node/node-ops-0"), listed.stderr
    missing = subprocess.run([kubectl, "get", "ns", "nope"], env=env, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 1 and 'namespaces "nope" not found' in missing.stderr


def test_kubectl_in_a_pod_finds_the_pod_in_its_own_namespace(armada):
    """As Armada's basic/gang case does: the namespace from the service-account folder, then kubectl
    (process pods reach the API through a kubeconfig in their HOME, not the in-cluster token)."""
    server, client = armada
    _kubectl()
    script = (
        "NS=$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace)\n"
        'kubectl get po -n "$NS" -o jsonpath="{.items[?(@.metadata.uid==\'$POD_UID\')].status.podIP} $NS"'
    )
    spec = pod(["bash", "-c"], args=[script])
    spec.containers[0].env.append(
        core.EnvVar(
            name="POD_UID", valueFrom=core.EnvVarSource(fieldRef=core.ObjectFieldSelector(fieldPath="metadata.uid"))
        )
    )
    job_id = submit_one(client, "conformance", "kube-view", item(spec, namespace=NAMESPACE))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED, timeout=60)
    assert server.logs(job_id)[-1] == f"127.0.0.1 {NAMESPACE}"
    assert state_of(client, job_id) == submit_pb2.SUCCEEDED


def test_kubectl_logs_prints_a_pods_log_as_a_cluster_does(armada):
    server, client = armada
    code = "print('first', flush=True); print('second', flush=True)"
    job_id = submit_one(client, "conformance", "kube-view", item(pod(python(code)), namespace=NAMESPACE))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED)

    def logs(*flags: str) -> subprocess.CompletedProcess:
        return _kubectl_logs(server, job_id, *flags)

    shown = logs()
    assert (shown.returncode, shown.stdout) == (0, "first\nsecond\n"), shown.stderr
    assert logs("--tail=1").stdout == "second\n"
    assert logs("-f").stdout == "first\nsecond\n"  # the pod has ended: follow prints all and returns
    assert logs("-c", "nosuch").returncode != 0


def test_kubectl_logs_follows_a_running_pod_until_it_ends(armada):
    server, client = armada
    code = "import time\nfor n in range(3):\n    print(n, flush=True)\n    time.sleep(0.5)"
    job_id = submit_one(client, "conformance", "kube-view", item(pod(python(code)), namespace=NAMESPACE))
    wait_for_state(client, job_id, submit_pb2.RUNNING)
    followed = _kubectl_logs(server, job_id, "-f")
    assert (followed.returncode, followed.stdout) == (0, "0\n1\n2\n"), followed.stderr


def _kubectl_logs(server, job_id: str, *flags: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "KUBECONFIG": str(server.kubeconfig)}
    command = [_kubectl(), "logs", "-n", NAMESPACE, *flags, f"armada-{job_id}-0"]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)


def test_the_log_of_a_pod_that_does_not_exist_is_not_found(armada):
    server, _ = armada
    status, answer = get(server, f"/api/v1/namespaces/{NAMESPACE}/pods/armada-nosuch-0/log")
    assert (status, answer["reason"]) == (404, "NotFound")
