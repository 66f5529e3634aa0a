"""The kubelet endpoint answers the API server only: a client certificate of the authority, with the API
server's name; and serves a pod's log as the API server asks for it."""

from __future__ import annotations

import datetime
import pathlib
import ssl
import urllib.request
from typing import Iterator, Optional

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from armada_flyte.node_agent.kubelet_endpoint import EndpointTls, KubeletEndpoint
from armada_flyte.pod_runner import PodLog

API_SERVER = "kube-apiserver-kubelet-client"


class Authority:
    """A certificate authority of the test's own, issuing certificates into `folder`."""

    def __init__(self, folder: pathlib.Path):
        self.folder = folder
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test-ca")])
        self.cert = self._sign(self.name, self.key.public_key(), ca=True)
        self.cert_file = folder / "ca.crt"
        self.cert_file.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def _sign(self, subject: x509.Name, public_key, ca: bool = False, loopback: bool = False) -> x509.Certificate:
        now = datetime.datetime.now(datetime.timezone.utc)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self.name)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if loopback:
            import ipaddress

            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
            )
        return builder.sign(self.key, hashes.SHA256())

    def issue(self, name: str, loopback: bool = False) -> tuple[pathlib.Path, pathlib.Path]:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = self._sign(
            x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]), key.public_key(), loopback=loopback
        )
        cert_file, key_file = self.folder / f"{name}.crt", self.folder / f"{name}.key"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        return cert_file, key_file


@pytest.fixture
def authority(tmp_path) -> Authority:
    return Authority(tmp_path)


@pytest.fixture
def endpoint(authority) -> Iterator[KubeletEndpoint]:
    log = PodLog()
    log.write("stdout", "hello from the pod")
    logs = {("default", "armada-1-0", "main"): log}
    cert, key = authority.issue("node-agent", loopback=True)
    server = KubeletEndpoint(
        "127.0.0.1", 0, EndpointTls(cert, key, authority.cert_file, (API_SERVER,)), lambda *key: logs.get(key)
    )
    server.start()
    yield server
    server.stop()


def get(endpoint: KubeletEndpoint, authority: Authority, path: str, client: Optional[str]) -> tuple[int, bytes]:
    context = ssl.create_default_context(cafile=str(authority.cert_file))
    if client:
        context.load_cert_chain(*map(str, authority.issue(client)))
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{endpoint.port}{path}", context=context, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read()


def test_the_api_server_reads_a_containers_log(endpoint, authority):
    assert get(endpoint, authority, "/containerLogs/default/armada-1-0/main", API_SERVER) == (
        200,
        b"hello from the pod\n",
    )


def test_a_client_certificate_of_another_name_is_forbidden(endpoint, authority):
    status, _ = get(endpoint, authority, "/containerLogs/default/armada-1-0/main", "someone-else")
    assert status == 403


def test_a_client_without_a_certificate_is_refused_in_the_handshake(endpoint, authority):
    with pytest.raises((ssl.SSLError, ConnectionError, urllib.error.URLError)):
        get(endpoint, authority, "/containerLogs/default/armada-1-0/main", None)


def test_a_pod_or_container_the_node_does_not_hold_is_not_found(endpoint, authority):
    assert get(endpoint, authority, "/containerLogs/default/armada-2-0/main", API_SERVER)[0] == 404
    assert get(endpoint, authority, "/containerLogs/default/armada-1-0/other", API_SERVER)[0] == 404
