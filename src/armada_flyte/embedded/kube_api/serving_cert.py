"""A self-signed serving certificate for the Kubernetes API, made afresh at each start.

client-go (so kubectl, and Armada's testsuite) sends a kubeconfig's token or basic credentials only
over TLS: its clientcmd sets the user's credentials on a transport only when that transport is TLS,
and over plain HTTP sends none. So when the API requires credentials it serves HTTPS, with this
certificate, which the kubeconfig names as its certificate authority (`certificate-authority-data`).
The key lives in memory and, for the moment `ssl` needs to load it, in a private temporary folder.
"""

from __future__ import annotations

import datetime
import ipaddress
import pathlib
import ssl
import tempfile
from dataclasses import dataclass, field
from typing import Iterable

VALID_DAYS = 365
"""A server keeps its certificate while it runs; a restart makes a new one (and a new kubeconfig)."""


@dataclass(frozen=True)
class ServingCert:
    cert_pem: bytes
    """The certificate, which clients trust as its own authority."""
    key_pem: bytes = field(repr=False)

    @classmethod
    def generate(cls, names: Iterable[str] = ()) -> ServingCert:
        """A certificate for 127.0.0.1, ::1, localhost and `names` (host names the API also answers to)."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "armada-flyte embedded Kubernetes API")])
        alternative: list[x509.GeneralName] = [
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            x509.IPAddress(ipaddress.ip_address("::1")),
            x509.DNSName("localhost"),
        ]
        alternative += [x509.DNSName(name) for name in sorted(set(names)) if name != "localhost"]
        now = datetime.datetime.now(datetime.timezone.utc)
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
            .add_extension(x509.SubjectAlternativeName(alternative), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .sign(key, hashes.SHA256())
        )
        key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        return cls(cert.public_bytes(serialization.Encoding.PEM), key_pem)

    def server_context(self) -> ssl.SSLContext:
        """A server-side TLS context (TLS 1.2 and later) presenting this certificate."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        with tempfile.TemporaryDirectory(prefix="armada-flyte-kube-tls-") as folder:  # 0700
            cert, key = pathlib.Path(folder, "tls.crt"), pathlib.Path(folder, "tls.key")
            cert.write_bytes(self.cert_pem)
            key.touch(mode=0o600)
            key.write_bytes(self.key_pem)
            context.load_cert_chain(cert, key)
        return context
