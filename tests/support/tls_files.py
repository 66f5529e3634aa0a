"""A self-signed certificate for 127.0.0.1, so servers started by tests can serve TLS (the one the embedded
Kubernetes API makes for itself, written to files)."""

from __future__ import annotations

import pathlib
from dataclasses import dataclass

from armada_flyte.embedded.kube_api.serving_cert import ServingCert


@dataclass(frozen=True)
class TlsFiles:
    cert: pathlib.Path
    """The certificate (PEM); clients trust it as their CA."""
    key: pathlib.Path


def self_signed(folder: pathlib.Path) -> TlsFiles:
    made = ServingCert.generate()
    files = TlsFiles(folder / "server.crt", folder / "server.key")
    files.cert.write_bytes(made.cert_pem)
    files.key.write_bytes(made.key_pem)
    return files
