"""The Kubernetes parts of a bed from another machine, and from a local user without the bed's credentials.

kube-apiserver, etcd, kube-scheduler, kube-controller-manager and the node agent's kubelet endpoint listen
on 127.0.0.1 only; Armada's executor and Binoculars bind every address (Armada's Go code), so Binoculars
takes the bed's basic auth and the executor serves only /health and metrics. Locally, the API server takes
only the bed's tokens and certificates, etcd only clients with a certificate of the bed's authority, and the
kubelet endpoint only the API server's own certificate. This machine's non-loopback address stands in for
another machine (`support.exposure`); docs/security.md lists the same.
"""

from __future__ import annotations

import pathlib
import socket
import ssl
import stat

import grpc
import httpx
import pytest
from armada_client.armada import binoculars_pb2, binoculars_pb2_grpc

from support.exposure import accepts_connections, listeners, non_loopback_address, process_group_members

PUBLIC_API, EXECUTOR_API, REST_GATEWAY, SCHEDULER_HTTP = 1, 2, 3, 4
ARMADA_METRICS = (9, 10, 11, 12, 13)
KUBE_APISERVER, ETCD_CLIENT, ETCD_PEER, KUBE_SCHEDULER, KUBE_CONTROLLER_MANAGER = 18, 19, 20, 21, 22
ARMADA_EXECUTOR_HTTP, ARMADA_EXECUTOR_METRICS, KUBELET, BINOCULARS_GRPC, BINOCULARS_HTTP, BINOCULARS_METRICS = (
    23,
    24,
    25,
    26,
    27,
    28,
)
OPEN_TO_THE_NETWORK = {
    PUBLIC_API,
    EXECUTOR_API,
    REST_GATEWAY,
    SCHEDULER_HTTP,
    *ARMADA_METRICS,
    ARMADA_EXECUTOR_HTTP,
    ARMADA_EXECUTOR_METRICS,
    BINOCULARS_GRPC,
    BINOCULARS_HTTP,
    BINOCULARS_METRICS,
}
"""What Armada's Go components bind on every address (Listen(":port")); nothing of Kubernetes' or ours."""
LOOPBACK_ONLY = {
    "kube-apiserver": KUBE_APISERVER,
    "etcd": ETCD_CLIENT,
    "etcd-peer": ETCD_PEER,
    "kube-scheduler": KUBE_SCHEDULER,
    "kube-controller-manager": KUBE_CONTROLLER_MANAGER,
    "kubelet-endpoint": KUBELET,
}


@pytest.fixture(scope="module")
def base(kubernetes_bed: dict[str, str]) -> int:
    return int(kubernetes_bed["ARMADA_URL"].rsplit(":", 1)[1]) - PUBLIC_API


@pytest.fixture(scope="module")
def remote() -> str:
    return non_loopback_address()


def test_every_socket_open_to_the_network_is_armadas_own(kubernetes_bed, base):
    state = pathlib.Path(kubernetes_bed["REAL_ARMADA_STATE"])
    leaders = {int(path.read_text()) for path in (state / "pids").glob("*.pid")}
    found = listeners(process_group_members(leaders))
    assert {listener.port for listener in found} >= {base + KUBE_APISERVER, base + KUBELET}, (
        "the bed's parts are not up"
    )
    open_ports = {listener.port for listener in found if not listener.loopback_only}
    assert open_ports <= {base + offset for offset in OPEN_TO_THE_NETWORK}, (
        f"the bed listens on every address at ports {sorted(open_ports)}, beyond the ones docs/security.md names"
    )


@pytest.mark.parametrize("part", sorted(LOOPBACK_ONLY))
def test_the_kubernetes_parts_refuse_another_machines_connection(remote, base, part):
    port = base + LOOPBACK_ONLY[part]
    assert accepts_connections("127.0.0.1", port), f"{part} is not up: this test would prove nothing"
    assert not accepts_connections(remote, port)


def test_the_api_server_refuses_a_local_user_without_a_token(kubernetes_bed, base):
    ca = pathlib.Path(kubernetes_bed["KUBECONFIG"]).parent / "ca.crt"
    trust = ssl.create_default_context(cafile=str(ca))
    answer = httpx.get(f"https://127.0.0.1:{base + KUBE_APISERVER}/api/v1/secrets", verify=trust, timeout=30)
    assert answer.status_code == 401


def test_etcd_refuses_a_client_without_the_beds_certificate(kubernetes_bed, base):
    ca = pathlib.Path(kubernetes_bed["KUBECONFIG"]).parent / "ca.crt"
    answer = _tls_get_without_a_certificate(base + ETCD_CLIENT, ca, "/v3/kv/range")
    assert answer is None or not answer.startswith(b"HTTP/1.1 200"), answer


def test_the_kubelet_endpoint_refuses_a_client_without_the_api_servers_certificate(kubernetes_bed, base):
    ca = pathlib.Path(kubernetes_bed["KUBECONFIG"]).parent / "ca.crt"
    answer = _tls_get_without_a_certificate(base + KUBELET, ca, "/containerLogs/default/any/main")
    assert answer is None or not answer.startswith(b"HTTP/1.0 200"), answer


def test_binoculars_refuses_an_anonymous_log_request_from_another_machine(remote, base):
    with grpc.insecure_channel(f"{remote}:{base + BINOCULARS_GRPC}") as channel:
        stub = binoculars_pb2_grpc.BinocularsStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.Logs(binoculars_pb2.LogRequest(job_id="any", pod_namespace="default"), timeout=30)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_the_clusters_keys_and_tokens_are_for_the_beds_user_only(kubernetes_bed):
    folder = pathlib.Path(kubernetes_bed["KUBECONFIG"]).parent
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    private = [p for p in folder.iterdir() if p.suffix in (".key", ".token", ".kubeconfig") or p.name == "tokens.csv"]
    assert private and all(stat.S_IMODE(p.stat().st_mode) & 0o077 == 0 for p in private), private
    token = (folder / "bed-admin.token").read_text().strip()
    assert not [p for p in pathlib.Path("/proc").glob("[0-9]*/cmdline") if token.encode() in _read(p)]


def _tls_get_without_a_certificate(port: int, ca: pathlib.Path, path: str) -> bytes | None:
    """A GET over TLS with no client certificate: the answer's first bytes, or None when the handshake or the
    connection was refused (what a server requiring a client certificate does)."""
    context = ssl.create_default_context(cafile=str(ca))
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                tls.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
                return tls.recv(200) or None
    except (ssl.SSLError, OSError):
        return None


def _read(path: pathlib.Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""
