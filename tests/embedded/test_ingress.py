"""Jobs with `ingress`: the JobIngressInfoEvent Armada's executor sends once the pod runs, and the
embedded ingress controller that routes those hosts to the pod (as kind's ingress controller does in
Armada's CI, where the testsuite GETs each host at ARMADA_EXECUTOR_INGRESS_URL:PORT).

Hosts read `<container>-<port>-armada-<job id>-0.<namespace>.svc` (createIngressFromService in
internal/server/submit/conversion/conversions.go, suffix from _local/executor/config.yaml); the event
maps each container port to its host and carries the pod's node and name (CreateJobIngressInfoEvent
in internal/executor/reporter/event.go).
"""

from __future__ import annotations

import http.client
import socket
import urllib.parse

import pytest
from armada_client.armada import submit_pb2
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core

from support.job_events import job_of, job_set_events, kind
from support.pods import item, pod, python, submit_one
from support.waiting import wait_for_state, wait_until

pytestmark = pytest.mark.embedded_only

SERVER = (
    "import http.server, sys\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    def do_GET(self):\n"
    "        body = ('hello from ' + self.headers['Host']).encode()\n"
    "        self.send_response(200); self.send_header('Content-Length', str(len(body))); self.end_headers()\n"
    "        self.wfile.write(body)\n"
    "http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()\n"
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _ingress_item(port: int, other_port: int) -> submit_pb2.JobSubmitRequestItem:
    spec = pod(python(SERVER), args=[str(port)])
    spec.containers[0].name = "web"
    spec.containers[0].ports.extend(
        [core.ContainerPort(containerPort=port, name="http"), core.ContainerPort(containerPort=other_port)]
    )
    request = item(spec)
    request.ingress.append(submit_pb2.IngressConfig(type=submit_pb2.Ingress, ports=[port]))
    return request


def _get(ingress_url: str, host: str) -> tuple[int, str]:
    address = urllib.parse.urlsplit(ingress_url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=10)
    try:
        connection.request("GET", "/", headers={"Host": host})
        response = connection.getresponse()
        return response.status, response.read().decode()
    except (OSError, http.client.HTTPException) as exc:  # the pod going away mid-request
        return 0, str(exc)
    finally:
        connection.close()


def test_a_running_job_reports_its_ingress_and_the_controller_routes_to_it(
    embedded_armada, client, queue, job_set
) -> None:
    port, other = _free_port(), _free_port()
    job_id = submit_one(client, queue, job_set, _ingress_item(port, other))
    wait_for_state(client, job_id, submit_pb2.RUNNING)

    def ingress_event():
        events = [m for m in job_set_events(client, queue, job_set) if job_of(m) == job_id]
        return next((m for m in events if kind(m) == "ingress_info"), None)

    message = wait_until(ingress_event, what="the ingress info event")
    kinds = [kind(m) for m in job_set_events(client, queue, job_set) if job_of(m) == job_id]
    assert kinds.index("ingress_info") > kinds.index("running")
    info = message.message.ingress_info
    host = f"web-{port}-armada-{job_id}-0.default.svc"
    assert dict(info.ingress_addresses) == {port: host}  # only the port the ingress names
    assert info.pod_name == f"armada-{job_id}-0" and info.pod_namespace == "default"
    assert info.node_name == embedded_armada.job(job_id).node

    status, body = wait_until(
        lambda: (answer := _get(embedded_armada.ingress_url, host))[0] == 200 and answer,
        what="the pod to answer through the ingress controller",
    )
    assert body == f"hello from {host}"
    assert _get(embedded_armada.ingress_url, "nobody.default.svc")[0] == 404

    client.cancel_jobs(queue=queue, job_set_id=job_set, job_id=job_id)
    wait_for_state(client, job_id, submit_pb2.CANCELLED)
    # The route goes with the pod (its Ingress is owned by the pod, internal/executor/job/submit.go).
    wait_until(lambda: _get(embedded_armada.ingress_url, host)[0] == 404, what="the route to go")


def test_a_job_without_ingress_sends_no_ingress_info(client, queue, job_set) -> None:
    job_id = submit_one(client, queue, job_set, item(pod(["true"])))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    assert "ingress_info" not in [kind(m) for m in job_set_events(client, queue, job_set)]
