"""`armada-flyte dev` with credentials: from a private file or the environment (never its command line,
which every local user can read), required by everything it serves: the gRPC API, the view (which reads
Armada with the server's own credentials), the Kubernetes API (whose kubeconfig carries one) and the
ingress; and never printed."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
from typing import Iterator

import grpc
import pytest
from armada_client.client import ArmadaClient

from support.http_access import authorized_channel, basic, request
from support.process_output import Output

pytestmark = pytest.mark.embedded_only

DEV = [sys.executable, "-m", "armada_flyte.admin.cli", "dev", "--ephemeral", "--port", "0", "--no-blob-store"]
PASSWORD, TOKEN = "pw-from-file-1", "tok-from-file-1"


class Dev:
    """A running `armada-flyte dev` and what it printed."""

    def __init__(self, process: subprocess.Popen):
        self.process = process
        self.output = Output(process)
        self.output.wait_for(r"Press Ctrl-C to stop")

    def printed(self, pattern: str) -> str:
        return self.output.wait_for(pattern).group(1)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(timeout=20) == 0


def _start(*arguments: str, env: dict[str, str] | None = None) -> Dev:
    process = subprocess.Popen([*DEV, *arguments], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        return Dev(process)
    except BaseException:
        process.kill()
        process.wait()
        raise


@pytest.fixture(scope="module")
def from_file(tmp_path_factory) -> Iterator[Dev]:
    folder = tmp_path_factory.mktemp("auth")
    auth_file = folder / "auth"
    auth_file.touch(mode=0o600)
    auth_file.write_text(f"# who may use the dev server\nbasic:ann:{PASSWORD}\nbearer:{TOKEN}\n")
    dev = _start("--auth-file", str(auth_file), "--kubeconfig", str(folder / "kubeconfig"))
    yield dev
    dev.stop()


def _grpc_refused(url: str, header: str | None) -> bool:
    channel = authorized_channel(url, header) if header else grpc.insecure_channel(url)
    with channel:
        try:
            ArmadaClient(channel).get_queue("flyte")
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.UNAUTHENTICATED, error
            return True
    return False


def test_the_credentials_stay_off_its_command_line_and_out_of_what_it_prints(from_file) -> None:
    command_line = pathlib.Path(f"/proc/{from_file.process.pid}/cmdline").read_bytes()
    printed = from_file.output.text()
    for secret in (PASSWORD, TOKEN):
        assert secret.encode() not in command_line and secret not in printed


def test_the_banner_says_what_requires_them_and_where_they_came_from(from_file) -> None:
    assert "(pod runner: process; auth required)" in from_file.output.text()
    said = from_file.printed(r"^auth: (.*)$")
    assert "from --auth-file" in said
    assert all(part in said for part in ("gRPC API", "view", "Kubernetes API", "ingress"))


def test_the_grpc_api_requires_one(from_file) -> None:
    url = from_file.printed(r"listening on (127\.0\.0\.1:\d+)")
    assert _grpc_refused(url, None) and _grpc_refused(url, "Bearer wrong")
    assert not _grpc_refused(url, f"Bearer {TOKEN}") and not _grpc_refused(url, basic("ann", PASSWORD))


def test_the_view_requires_one_and_the_browser_asks_for_it(from_file) -> None:
    view = from_file.printed(r"^view: (http://127\.0\.0\.1:\d+/)$")
    status, headers, body = request(view)
    assert status == 401 and headers["www-authenticate"].startswith("Basic ")
    assert 'data-queue="flyte"' not in body
    status, _, page = request(view, authorization=basic("ann", PASSWORD))
    assert status == 200 and 'data-queue="flyte"' in page  # read from Armada with the server's credentials


def test_the_kubernetes_api_requires_one_and_its_private_kubeconfig_carries_it(from_file) -> None:
    url, kubeconfig = from_file.output.wait_for(
        r"Kubernetes API \(read-only\) on (https://\S+); KUBECONFIG=(\S+)"
    ).groups()
    assert oct(os.stat(kubeconfig).st_mode & 0o777) == oct(0o600)
    assert json.loads(pathlib.Path(kubeconfig).read_text())["users"][0]["user"] == {"token": TOKEN}
    status, _, body = request(url, "/api/v1/nodes", context=_unverified())
    assert status == 401 and json.loads(body)["reason"] == "Unauthorized"


def test_the_ingress_requires_one(from_file) -> None:
    ingress = from_file.printed(r"ingress controller on (http://127\.0\.0\.1:\d+)")
    host = "web-8080-armada-01h0000000000000000000000-0.default.svc"
    assert request(ingress, host=host)[0] == 401
    assert request(ingress, host=host, authorization=f"Bearer {TOKEN}")[0] == 404  # checked, then: no such job


def test_credentials_from_the_environment_are_required_and_not_passed_on() -> None:
    env = {**os.environ, "ARMADA_FLYTE_DEV_AUTH": f"bearer:{TOKEN}"}
    dev = _start("--no-view", env=env)
    try:
        url = dev.printed(r"listening on (127\.0\.0\.1:\d+)")
        assert "from ARMADA_FLYTE_DEV_AUTH" in dev.printed(r"^(auth: .*)$")
        assert _grpc_refused(url, None) and not _grpc_refused(url, f"Bearer {TOKEN}")
    finally:
        dev.stop()


def test_credentials_on_the_command_line_still_work_with_a_warning() -> None:
    dev = _start("--no-view", "--auth", f"bearer:{TOKEN}")
    try:
        assert "every local user can read them" in dev.output.text()
        url = dev.printed(r"listening on (127\.0\.0\.1:\d+)")
        assert _grpc_refused(url, None) and not _grpc_refused(url, f"Bearer {TOKEN}")
    finally:
        dev.stop()


def test_an_auth_file_others_can_read_is_refused_before_anything_starts(tmp_path) -> None:
    auth_file = tmp_path / "auth"
    auth_file.write_text(f"bearer:{TOKEN}\n")
    auth_file.chmod(0o644)
    done = subprocess.run([*DEV, "--auth-file", str(auth_file)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert f"chmod 600 {auth_file}" in done.stderr and TOKEN not in done.stderr + done.stdout
    assert "listening" not in done.stdout


def _unverified():
    """The test reads the refusal only: it needn't trust the server's certificate to see the 401."""
    import ssl

    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context
