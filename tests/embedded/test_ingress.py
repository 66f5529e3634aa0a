"""Jobs with `ingress`: the JobIngressInfoEvent Armada's executor sends once the pod runs, and the
embedded ingress controller that routes those hosts to the pod (as kind's ingress controller does in
Armada's CI, where the testsuite GETs each host at ARMADA_EXECUTOR_INGRESS_URL:PORT).

Hosts read `<container>-<port>-armada-<job id>-0.<namespace>.svc` (createIngressFromService in
internal/server/submit/conversion/conversions.go, suffix from _local/executor/config.yaml); the event
maps each container port to its host and carries the pod's node and name (CreateJobIngressInfoEvent
in internal/executor/reporter/event.go).

Who the controller answers (docs/security.md): a Host that is neither a job's ingress host nor a name of
this machine is misdirected (DNS rebinding); with the server's credentials (`armada-flyte dev --auth`)
every request needs one, and the pod never sees it; an idle client is dropped.
"""

from __future__ import annotations

import http.client
import json
import socket
import urllib.parse
from typing import Iterator

import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core

from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

from support.http_access import assert_idle_client_dropped, authorized_channel, basic, request
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


def _ingress_item(port: int, other_port: int, server: str = SERVER) -> submit_pb2.JobSubmitRequestItem:
    spec = pod(python(server), args=[str(port)])
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


HEADERS_ECHO = (  # answers with the request's Authorization and Connection headers, as it received them
    "import http.server, json, sys\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    protocol_version = 'HTTP/1.1'\n"
    "    def do_GET(self):\n"
    "        seen = {k: self.headers.get(k) for k in ('Authorization', 'Connection')}\n"
    "        body = json.dumps(seen).encode()\n"
    "        self.send_response(200); self.send_header('Content-Length', str(len(body))); self.end_headers()\n"
    "        self.wfile.write(body)\n"
    "http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()\n"
)
AUTH = ("basic:ann:pw-1", "bearer:tok-1")
IDLE_SECONDS = 1.0


@pytest.fixture(scope="module")
def secured() -> Iterator[tuple[EmbeddedArmada, str]]:
    """A server with credentials (as `dev --auth` starts it) and a running job behind its ingress: the host."""
    with EmbeddedArmada(EmbeddedConfig(auth=AUTH, idle_seconds=IDLE_SECONDS)) as armada:
        with authorized_channel(armada.url, "Bearer tok-1") as channel:
            client = ArmadaClient(channel)
            port = _free_port()
            job_id = submit_one(client, "flyte", "ingress-auth", _ingress_item(port, _free_port(), HEADERS_ECHO))
            wait_for_state(client, job_id, submit_pb2.RUNNING)
            host = f"web-{port}-armada-{job_id}-0.default.svc"
            wait_until(
                lambda: request(armada.ingress_url, host=host, authorization="Bearer tok-1")[0] == 200,
                what="the pod to answer through the ingress controller",
            )
            yield armada, host
            client.cancel_jobs(queue="flyte", job_set_id="ingress-auth", job_id=job_id)


def test_with_credentials_the_ingress_asks_for_one(secured) -> None:
    armada, host = secured
    for header in (None, basic("ann", "wrong"), "Bearer nope"):
        status, headers, body = request(armada.ingress_url, host=host, authorization=header)
        assert status == 401 and headers["www-authenticate"] == 'Basic realm="armada-flyte", charset="UTF-8"'
        assert "Authorization" not in body  # the pod's answer never came


@pytest.mark.parametrize("header", [basic("ann", "pw-1"), "Bearer tok-1"], ids=["basic", "bearer"])
def test_with_a_credential_the_pod_answers_and_never_sees_it(secured, header) -> None:
    armada, host = secured
    status, _, body = request(armada.ingress_url, host=host, authorization=header)
    assert status == 200
    # The credential is taken out, and the connection ends with this request, so the next one is checked too.
    assert json.loads(body) == {"Authorization": None, "Connection": "close"}


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:80", "10.1.2.3"])
def test_a_host_that_is_neither_an_ingress_nor_this_machine_is_misdirected(secured, host) -> None:
    armada, _ = secured
    status, headers, _ = request(armada.ingress_url, host=host, authorization="Bearer tok-1")
    assert status == 421 and "www-authenticate" not in headers


def test_its_own_address_and_unknown_ingress_hosts_need_a_credential_then_are_not_found(secured) -> None:
    armada, _ = secured
    for host in (None, "web-1-armada-nosuch-0.default.svc"):  # None: 127.0.0.1:PORT
        assert request(armada.ingress_url, host=host)[0] == 401  # whether a job's host exists is not told
        assert request(armada.ingress_url, host=host, authorization="Bearer tok-1")[0] == 404


def test_an_idle_client_of_the_ingress_is_dropped_while_others_are_served(secured) -> None:
    armada, host = secured

    def served() -> None:
        assert request(armada.ingress_url, host=host, authorization="Bearer tok-1")[0] == 200

    assert_idle_client_dropped(armada.ingress_url, IDLE_SECONDS, served)
