"""Who the embedded cluster's Kubernetes API answers (docs/security.md).

With the server's credentials (`armada-flyte dev --auth`) it checks `Authorization` as the API server
does (401 and a Status `Unauthorized`), serves HTTPS (client-go sends a kubeconfig's credentials only
over TLS), and writes a private kubeconfig carrying one credential and its certificate, so kubectl works;
pods get a token of their own, which Armada refuses. With or without credentials, a Host that doesn't
name this machine is misdirected (DNS rebinding), and an idle client is dropped.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import ssl
import stat
import subprocess
import urllib.parse
from typing import Iterator

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient

from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

from support.http_access import assert_idle_client_dropped, authorized_channel, basic, request
from support.pods import item, pod, submit_one
from support.real_parts import missing_part
from support.waiting import wait_for_state

pytestmark = pytest.mark.embedded_only

AUTH = ("basic:ann:pw-1", "bearer:tok-1")
IDLE_SECONDS = 1.0
UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}


@pytest.fixture(scope="module")
def secured(tmp_path_factory) -> Iterator[EmbeddedArmada]:
    kubeconfig = tmp_path_factory.mktemp("kube") / "config"
    config = EmbeddedConfig(auth=AUTH, idle_seconds=IDLE_SECONDS, kubeconfig=kubeconfig, allowed_hosts=("devbox",))
    with EmbeddedArmada(config) as armada:
        yield armada


def _kubeconfig(armada: EmbeddedArmada) -> dict:
    return json.loads(armada.kubeconfig.read_text())


def _trusting(armada: EmbeddedArmada) -> ssl.SSLContext:
    """A client context trusting the certificate the kubeconfig names, as kubectl does."""
    ca = base64.b64decode(_kubeconfig(armada)["clusters"][0]["cluster"]["certificate-authority-data"])
    return ssl.create_default_context(cadata=ca.decode())


def _get(armada: EmbeddedArmada, path: str = "/api/v1/nodes", **headers: str) -> tuple[int, dict]:
    status, _, body = request(armada.kube_api_url, path, context=_trusting(armada), **headers)
    return status, json.loads(body)


def test_with_credentials_it_serves_https_and_refuses_a_request_without_one_as_kubernetes_does(secured) -> None:
    assert urllib.parse.urlsplit(secured.kube_api_url).scheme == "https"
    for path in ("/version", "/api", "/api/v1/nodes", "/api/v1/namespaces/default/pods/nosuch/log"):
        assert _get(secured, path) == (401, UNAUTHORIZED)
    assert _get(secured, authorization="Bearer nope") == (401, UNAUTHORIZED)
    assert _get(secured, authorization=basic("ann", "wrong")) == (401, UNAUTHORIZED)


@pytest.mark.parametrize("header", ["Bearer tok-1", basic("ann", "pw-1")], ids=["bearer", "basic"])
def test_a_bearer_or_basic_credential_is_served(secured, header) -> None:
    status, answer = _get(secured, authorization=header)
    assert status == 200 and answer["kind"] == "NodeList"


def test_the_kubeconfig_is_private_and_carries_one_credential_and_the_certificate(secured) -> None:
    assert stat.S_IMODE(secured.kubeconfig.stat().st_mode) == 0o600
    config = _kubeconfig(secured)
    assert config["users"][0]["user"] == {"token": "tok-1"}
    assert config["clusters"][0]["cluster"]["server"] == secured.kube_api_url


def _kubectl(armada: EmbeddedArmada, *arguments: str, kubeconfig: str = "") -> subprocess.CompletedProcess:
    found = shutil.which("kubectl")
    if found is None:
        missing_part("kubectl is not installed (scripts/install-test-parts.sh installs Debian's kubernetes-client)")
    env = {**os.environ, "KUBECONFIG": kubeconfig or str(armada.kubeconfig)}
    return subprocess.run([found, *arguments], env=env, capture_output=True, text=True, timeout=60)


def test_kubectl_reads_the_cluster_through_the_kubeconfig(secured) -> None:
    listed = _kubectl(secured, "get", "nodes", "-o", "name")
    assert listed.returncode == 0, listed.stderr
    assert "node/amd64-0" in listed.stdout.split()


def test_kubectl_with_a_wrong_credential_is_unauthorized(secured, tmp_path) -> None:
    config = _kubeconfig(secured)
    config["users"][0]["user"] = {"token": "wrong"}
    wrong = tmp_path / "config"
    wrong.write_text(json.dumps(config))
    refused = _kubectl(secured, "get", "nodes", kubeconfig=str(wrong))
    assert refused.returncode == 1 and "Unauthorized" in refused.stderr


def test_a_pod_reads_the_cluster_with_a_token_of_its_own_that_armada_refuses(secured) -> None:
    _kubectl(secured, "version", "--client")  # skips (or fails under CI) without kubectl
    script = (
        "kubectl get nodes -o name | head -1\n"
        'python3 -c "import json, os; '
        "print(json.load(open(os.path.expanduser('~/.kube/config')))['users'][0]['user']['token'])\""
    )
    with authorized_channel(secured.url, "Bearer tok-1") as channel:
        client = ArmadaClient(channel)
        job_id = submit_one(client, "flyte", "kube-access", item(pod(["bash", "-c"], args=[script])))
        wait_for_state(client, job_id, submit_pb2.SUCCEEDED, timeout=60)
    node, token = secured.logs(job_id)[-2:]
    assert node == "node/amd64-0"
    assert token and token not in ("tok-1", "pw-1")
    with authorized_channel(secured.url, f"Bearer {token}") as channel:
        with pytest.raises(grpc.RpcError) as refused:
            ArmadaClient(channel).get_queue("flyte")
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:443"])
def test_a_rebound_host_is_misdirected_before_any_credential_is_asked(secured, host) -> None:
    status, answer = _get(secured, host=host, authorization="Bearer tok-1")
    assert (status, answer["kind"], answer["code"]) == (421, "Status", 421)
    assert _get(secured, host="devbox:6443", authorization="Bearer tok-1")[0] == 200  # a name the user allowed


def test_without_credentials_it_still_misdirects_a_rebound_host(embedded_armada) -> None:
    assert urllib.parse.urlsplit(embedded_armada.kube_api_url).scheme == "http"
    assert request(embedded_armada.kube_api_url, "/api/v1/nodes", host="attacker.example")[0] == 421
    assert request(embedded_armada.kube_api_url, "/api/v1/nodes")[0] == 200


def test_an_idle_client_is_dropped_while_others_are_served(secured) -> None:
    def served() -> None:
        assert _get(secured, authorization="Bearer tok-1")[0] == 200

    assert_idle_client_dropped(secured.kube_api_url, IDLE_SECONDS, served)
