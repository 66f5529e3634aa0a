"""The real-Armada bed from another machine: nothing usable without the bed's credentials.

Armada's Go components listen on every address, so the public API, its REST gateway and the executor
API must refuse anonymous calls (the executor runs whatever it is leased: an open executor API is
code execution for anyone on the network). Everything else of the bed listens on 127.0.0.1 only, so
another machine's connection is refused. This machine's non-loopback address stands in for another
machine (`support.exposure`). docs/security.md lists the same ports.
"""

from __future__ import annotations

import pathlib
import socket
import stat
import subprocess
from typing import Iterator

import grpc
import httpx
import pytest
from armada_client.client import ArmadaClient

from support.armada_channels import armada_channel, bed_authorization
from support.exposure import accepts_connections, listeners, non_loopback_address, process_group_members
from support.real_armada import uses_real_armada

# The bed's ports by their offset from REAL_ARMADA_PORT_BASE (scripts/real-armada/configs.sh, ports_from_base).
PUBLIC_API, EXECUTOR_API, REST_GATEWAY, SCHEDULER_HTTP = 1, 2, 3, 4
POSTGRES, REDIS, PULSAR_BROKER, PULSAR_WEB = 5, 6, 7, 8
METRICS = (9, 10, 11, 12, 13)
"""Prometheus metrics of the server, scheduler and ingesters: read-only counters, on every address."""
OPEN_TO_THE_NETWORK = {PUBLIC_API, EXECUTOR_API, REST_GATEWAY, SCHEDULER_HTTP, *METRICS}
"""What Armada's Go components bind on every address (Listen(":port"); no setting moves them)."""


@pytest.fixture(scope="module")
def bed(request: pytest.FixtureRequest) -> dict[str, str]:
    if not uses_real_armada(request.config):
        pytest.skip("looks at a real-Armada bed: run with --armada real")
    return request.getfixturevalue("real_armada")


@pytest.fixture(scope="module")
def base(bed: dict[str, str]) -> int:
    return int(bed["ARMADA_URL"].rsplit(":", 1)[1]) - PUBLIC_API


@pytest.fixture(scope="module")
def remote() -> str:
    return non_loopback_address()


@pytest.fixture
def anonymous(remote: str, base: int) -> Iterator[ArmadaClient]:
    """A client with no credentials, from "another machine"."""
    with grpc.insecure_channel(f"{remote}:{base + PUBLIC_API}") as channel:
        yield ArmadaClient(channel)


def test_every_socket_open_to_the_network_is_one_that_takes_the_beds_auth(bed, base):
    state = pathlib.Path(bed["REAL_ARMADA_STATE"])
    leaders = {int(path.read_text()) for path in (state / "pids").glob("*.pid")}
    open_ports = {listener.port for listener in listeners(process_group_members(leaders)) if not listener.loopback_only}
    assert open_ports, "found none of the bed's sockets: does this test see its processes' sockets (root)?"
    assert open_ports <= {base + offset for offset in OPEN_TO_THE_NETWORK}, (
        f"the bed listens on every address at ports {sorted(open_ports)}, beyond the ones docs/security.md names"
    )


def test_an_anonymous_submit_path_call_from_another_machine_is_refused(anonymous):
    with pytest.raises(grpc.RpcError) as refused:
        anonymous.create_queue(anonymous.create_queue_request("from-another-machine", priority_factor=1.0))
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_the_beds_credentials_are_accepted_from_another_machine(remote, base):
    """The same call with the password goes through: what refuses the anonymous one is the auth, not the route."""
    with armada_channel(f"{remote}:{base + PUBLIC_API}") as channel:
        client = ArmadaClient(channel)
        client.create_queue(client.create_queue_request("exposure-check", priority_factor=1.0))
        assert client.get_queue("exposure-check").name == "exposure-check"


def test_an_anonymous_lease_from_another_machine_is_refused(remote, base):
    from armada_flyte.executor.stubs import executorapi_pb2, executorapi_pb2_grpc

    with grpc.insecure_channel(f"{remote}:{base + EXECUTOR_API}") as channel:
        stub = executorapi_pb2_grpc.ExecutorApiStub(channel)
        request = executorapi_pb2.LeaseRequest(executor_id="another-machine", pool="default")
        with pytest.raises(grpc.RpcError) as refused:
            list(stub.LeaseJobRuns(iter([request]), timeout=30))
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_the_rest_gateway_refuses_an_anonymous_queue_and_takes_the_beds_user(remote, base):
    url = f"http://{remote}:{base + REST_GATEWAY}/v1/queue"
    body = {"name": "rest-exposure-check", "priorityFactor": 1}
    assert httpx.post(url, json=body, timeout=30).status_code == 401
    login = {"Authorization": bed_authorization()}
    assert httpx.post(url, json=body, headers=login, timeout=30).status_code == 200


@pytest.mark.parametrize(
    "offset", [POSTGRES, REDIS, PULSAR_BROKER, PULSAR_WEB], ids=["postgres", "redis", "pulsar", "pulsar-web"]
)
def test_the_beds_stores_refuse_another_machines_connection(remote, base, offset):
    assert accepts_connections("127.0.0.1", base + offset), "the part is not up: this test would prove nothing"
    assert not accepts_connections(remote, base + offset)


def test_postgres_refuses_a_local_user_without_the_password(bed, base):
    psql = next(pathlib.Path("/usr/lib/postgresql").glob("*/bin/psql"), None)
    if psql is None:
        pytest.skip("no psql (Debian's postgresql package has it)")
    result = subprocess.run(
        [str(psql), "-w", "-h", "127.0.0.1", "-p", str(base + POSTGRES), "-U", "postgres", "-c", "select 1", "lookout"],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert result.returncode != 0 and "password" in result.stderr, result.stderr


def test_redis_refuses_a_local_client_without_the_password(base):
    with socket.create_connection(("127.0.0.1", base + REDIS), timeout=10) as redis:
        redis.sendall(b"PING\r\n")
        assert redis.recv(200).startswith(b"-NOAUTH")


def test_the_password_is_in_a_file_only_its_owner_reads_and_on_no_command_line(bed):
    password_file = pathlib.Path(bed["ARMADA_FLYTE_AUTH_PASSWORD_FILE"])
    assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
    state = pathlib.Path(bed["REAL_ARMADA_STATE"])
    assert stat.S_IMODE(state.stat().st_mode) & 0o007 == 0, "the state folder is open to other users"
    password = password_file.read_text().strip()
    assert not [path for path in pathlib.Path("/proc").glob("[0-9]*/cmdline") if password.encode() in _read(path)]


def _read(path: pathlib.Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # the process ended meanwhile
        return b""
