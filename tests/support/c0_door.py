"""`armada-flyte c0` started as the Deployment starts it: TLS from a Secret-like folder, a home and working
folder it cannot write, one writable TMPDIR (the pod's emptyDir on /tmp), and, when the tests run as root,
the image's uid 10001, so the read-only places are read-only for it too (`as_service_user`)."""

from __future__ import annotations

import contextlib
import datetime
import functools
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Iterator, Mapping, Sequence

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from support.c0_service import free_port
from support.waiting import wait_until

ROOT = pathlib.Path(__file__).resolve().parents[2]
SERVICE_UID = 10001
"""The connector image's user (deploy/connector/Dockerfile, the Deployment's runAsUser)."""
CONNECTOR_SERVICE = "flyteidl2.connector.AsyncConnectorService"
START_SECONDS = 120.0


@contextlib.contextmanager
def service_folder() -> Iterator[pathlib.Path]:
    """A folder the service user can reach (pytest's tmp_path is 0700 root), removed afterwards."""
    folder = pathlib.Path(tempfile.mkdtemp(prefix="c0-door-"))
    try:
        folder.chmod(0o755)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _as_user() -> list[str]:
    return [shutil.which("setpriv") or "setpriv", f"--reuid={SERVICE_UID}", f"--regid={SERVICE_UID}", "--clear-groups"]


@functools.cache
def as_service_user() -> bool:
    """Run as the image's uid: when the tests run as root and that uid can import the package from here.

    A checkout in a folder only root may enter (a CI clone made by mktemp -d, say) leaves it out: the
    process then runs as us, and only its home is checked for writes (in /tmp, others' files look alike)."""
    if os.geteuid() != 0:
        return False
    try:
        tried = subprocess.run(
            [*_as_user(), sys.executable, "-c", "import armada_flyte.admin.cli"],
            cwd="/",
            capture_output=True,
            timeout=120,
        )
    except FileNotFoundError:  # no setpriv
        return False
    return tried.returncode == 0


def hand_to_service_user(path: pathlib.Path, mode: int) -> None:
    """`path` with `mode`, owned by the service user when the tests run as root (else by us, as it is)."""
    if as_service_user():
        os.chown(path, SERVICE_UID, SERVICE_UID)
    path.chmod(mode)


def connector_certs(folder: pathlib.Path, *names: str) -> pathlib.Path:
    """deploy/tls/connector-certs.sh, the documented openssl recipe, run into `folder` (readable by the service)."""
    command = [str(ROOT / "deploy" / "tls" / "connector-certs.sh"), str(folder)]
    for name in names:
        command += ["--name", name]
    subprocess.run(command, check=True, capture_output=True, text=True, timeout=60)
    folder.chmod(0o755)
    for name in ("ca.crt", "tls.crt"):
        (folder / name).chmod(0o644)
    hand_to_service_user(folder / "tls.key", 0o400)
    return folder


@dataclass(frozen=True)
class PodLayout:
    """A read-only home and working folder, and the one writable TMPDIR."""

    home: pathlib.Path
    tmp: pathlib.Path

    @classmethod
    def make(cls, base: pathlib.Path) -> PodLayout:
        base.chmod(0o755)
        home, tmp = base / "home", base / "tmp"
        home.mkdir()
        home.chmod(0o555)  # root's, or ours without a write bit
        tmp.mkdir()
        hand_to_service_user(tmp, 0o700)
        return cls(home, tmp)

    def written_outside_tmp(self, since: float) -> list[str]:
        """Files the service user wrote, since `since`, in the places it could write besides TMPDIR."""
        found = []
        for place in (self.home, pathlib.Path("/tmp"), pathlib.Path("/var/tmp"), pathlib.Path("/dev/shm")):
            for path in _walk(place, skip=self.tmp):
                with contextlib.suppress(OSError):
                    status = path.lstat()
                    ours = status.st_uid == SERVICE_UID if as_service_user() else place == self.home
                    if ours and status.st_mtime >= since:
                        found.append(str(path))
        return found


def _walk(place: pathlib.Path, skip: pathlib.Path) -> Iterator[pathlib.Path]:
    for folder, dirs, files in os.walk(place, onerror=lambda _: None):
        dirs[:] = [d for d in dirs if pathlib.Path(folder, d) != skip]
        yield pathlib.Path(folder)
        yield from (pathlib.Path(folder, f) for f in files)


@dataclass
class DoorC0:
    """A running `armada-flyte c0` and its ports."""

    process: subprocess.Popen
    port: int
    health_port: int
    log: pathlib.Path
    started: float = field(default_factory=time.time)

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def _health(port: int) -> int:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        request = health_pb2.HealthCheckRequest(service=CONNECTOR_SERVICE)
        try:
            return health_pb2_grpc.HealthStub(channel).Check(request, timeout=2).status
        except grpc.RpcError:
            return health_pb2.HealthCheckResponse.UNKNOWN


@contextlib.contextmanager
def running_door_c0(
    layout: PodLayout, args: Sequence[str], env: Mapping[str, str], log: pathlib.Path
) -> Iterator[DoorC0]:
    """`armada-flyte c0 ARGS` with `env`, as the service user, in the read-only home; until it serves health."""
    program = pathlib.Path(sys.executable).parent / "armada-flyte"
    port, health_port = free_port(), free_port()
    command = [
        *(_as_user() if as_service_user() else []),
        str(program),
        "c0",
        f"--port={port}",
        f"--health-port={health_port}",
    ]
    command += [f"--prometheus_port={free_port()}", *args]
    pod_env = {
        "PATH": os.environ["PATH"],
        "HOME": str(layout.home),
        "TMPDIR": str(layout.tmp),
        "PYTHONDONTWRITEBYTECODE": "1",  # as the image sets it
        **env,
    }
    started = time.time()
    with log.open("a") as out:
        process = subprocess.Popen(command, env=pod_env, cwd=layout.home, stdout=out, stderr=subprocess.STDOUT)
    c0 = DoorC0(process, port, health_port, log, started)
    try:
        wait_until(
            lambda: process.poll() is not None or _health(health_port) == health_pb2.HealthCheckResponse.SERVING,
            timeout=START_SECONDS,
            what="armada-flyte c0 to serve health",
        )
        assert process.poll() is None, f"armada-flyte c0 exited {process.returncode}:\n{c0.tail()}"
        yield c0
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=30)


def client_certificate(ca_cert: pathlib.Path, ca_key: pathlib.Path) -> tuple[bytes, bytes]:
    """A client certificate (clientAuth) signed by the CA at `ca_cert`/`ca_key`: (certificate, key), PEM."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca = x509.load_pem_x509_certificate(ca_cert.read_bytes())
    signer = serialization.load_pem_private_key(ca_key.read_bytes(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "flyte-executor")]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(signer, hashes.SHA256())  # type: ignore[arg-type]
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem
