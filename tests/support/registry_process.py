"""Start and stop Debian's `docker-registry` (CNCF distribution) on 127.0.0.1 for the tests."""

from __future__ import annotations

import dataclasses
import pathlib
import secrets
import shutil
import socket
import subprocess
import time
from typing import Any, Callable, Optional

import httpx
import yaml

REGISTRY_BINARY = "docker-registry"
USER = "flyte-tester"
PASSWORD = secrets.token_urlsafe(12)
"""The one account the basic-auth and token registries accept (a fresh password each session)."""
READY_DEADLINE_SECONDS = 30.0


def free_port() -> int:
    """A TCP port nobody listens on at the moment (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(condition: Callable[[], bool], deadline_seconds: float, what: str, step: float = 0.05) -> None:
    """Poll `condition` until it holds; fail naming `what` when the deadline passes."""
    give_up = time.monotonic() + deadline_seconds
    while not condition():
        if time.monotonic() > give_up:
            raise TimeoutError(f"{what} did not happen within {deadline_seconds:.0f}s")
        time.sleep(step)


def htpasswd_line(user: str, password: str) -> Optional[str]:
    """A bcrypt htpasswd entry (the only hash docker-registry accepts), or None when no tool can make one."""
    try:
        import bcrypt
    except ModuleNotFoundError:
        bcrypt = None
    if bcrypt is not None:
        return f"{user}:{bcrypt.hashpw(password.encode(), bcrypt.gensalt()).decode()}"
    program = shutil.which("htpasswd")
    if program is None:
        return None
    made = subprocess.run([program, "-nbB", user, password], capture_output=True, text=True, check=True)
    return made.stdout.strip()


@dataclasses.dataclass
class RegistryProcess:
    """One registry server with its own storage folder and config."""

    folder: pathlib.Path
    auth: Optional[dict[str, Any]] = None
    port: int = 0
    process: Optional[subprocess.Popen] = None

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def start(self) -> RegistryProcess:
        self.port = free_port()
        config: dict[str, Any] = {
            "version": 0.1,
            "log": {"level": "warn", "accesslog": {"disabled": True}},
            "storage": {
                "filesystem": {"rootdirectory": str(self.folder / "storage")},
                "delete": {"enabled": True},
                "cache": {"blobdescriptor": "inmemory"},
            },
            "http": {"addr": self.host, "secret": "armada-flyte-tests"},
        }
        if self.auth is not None:
            config["auth"] = self.auth
        config_file = self.folder / "config.yml"
        config_file.write_text(yaml.safe_dump(config))
        log = open(self.folder / "registry.log", "wb")
        self.process = subprocess.Popen(
            [shutil.which(REGISTRY_BINARY) or REGISTRY_BINARY, "serve", str(config_file)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        try:
            wait_until(self._answers, READY_DEADLINE_SECONDS, f"docker-registry answering on {self.host}")
        except TimeoutError:
            self.stop()
            raise RuntimeError(f"docker-registry did not start; its log:\n{self.log_tail()}") from None
        return self

    def _answers(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"docker-registry exited with {self.process.returncode}; its log:\n{self.log_tail()}")
        try:
            return httpx.get(f"{self.url}/v2/", timeout=1.0).status_code in (200, 401)
        except httpx.TransportError:
            return False

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join((self.folder / "registry.log").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
