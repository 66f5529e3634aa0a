"""The embedded server's state on a disk that fills up: nothing it acknowledged is lost.

Each test runs `armada-flyte dev` on a state folder on a disk that the test fills while the server
runs (`support.full_disk`: a small tmpfs, or a file-size limit on the server's process), then
frees. While its state can't be written the server refuses new jobs and queues, as Armada refuses
what it cannot publish (submit/submit.go, queue/queue_service.go), and says so in its health; what
it had acknowledged is kept, written once space returns and read back after a restart.
"""

from __future__ import annotations

import pathlib
from typing import Iterator

import grpc
import pytest
from armada_client.armada import health_pb2 as armada_health
from armada_client.armada import submit_pb2
from armada_client.log_client import JobLogClient
from grpc_health.v1 import health_pb2, health_pb2_grpc

from armada_flyte.armada_names import JobState
from armada_flyte.embedded.store.state_file import saved_job_states

from support.full_disk import DevServer, Disk, FileSizeLimit, printing, submit_until_refused, tmpfs, try_submit
from support.job_events import job_of, job_set_events, kind
from support.waiting import wait_for_state, wait_until

pytestmark = pytest.mark.embedded_only


@pytest.fixture(params=["tmpfs", "file-size limit"])
def disk(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[Disk]:
    if request.param == "tmpfs":
        yield from tmpfs()
    else:
        yield FileSizeLimit(tmp_path)


@pytest.fixture
def server(disk: Disk) -> Iterator[DevServer]:
    running = DevServer(disk.folder)
    yield running
    running.kill()


def _events(server: DevServer, job_set: str) -> dict[str, list[tuple[str, str]]]:
    """Each job's events in the job set: (message id, kind)."""
    found: dict[str, list[tuple[str, str]]] = {}
    for message in job_set_events(server.client, "cli", job_set):
        found.setdefault(job_of(message), []).append((message.id, kind(message)))
    return found


def _log(server: DevServer, job_id: str) -> list[str]:
    return [line.line for line in JobLogClient(server.url, job_id, disable_ssl=True).logs()]


def _health(server: DevServer, service: str) -> str:
    stub = health_pb2_grpc.HealthStub(server.channel)
    status = stub.Check(health_pb2.HealthCheckRequest(service=service)).status
    return health_pb2.HealthCheckResponse.ServingStatus.Name(status)


def test_every_job_acknowledged_on_a_full_disk_is_there_with_its_events_and_log_after_a_restart(disk, server):
    before = server.client.submit_jobs("cli", "js", [printing("before the disk filled")]).job_response_items[0].job_id
    wait_for_state(server.client, before, submit_pb2.SUCCEEDED)
    wait_until(lambda: saved_job_states(disk.folder).get(before) == JobState.SUCCEEDED, what="the first job saved")
    disk.fill(server.process.pid)
    acknowledged, _ = submit_until_refused(server.client, "js")
    assert acknowledged, "the first submission after the disk filled is answered from memory"
    for job_id in acknowledged:  # they run, and their runs' events and logs are kept in memory
        wait_for_state(server.client, job_id, submit_pb2.SUCCEEDED)
    disk.free(server.process.pid)
    after = wait_until(lambda: try_submit(server.client, "js", "after space returned")[0], what="a job accepted again")
    wait_for_state(server.client, after, submit_pb2.SUCCEEDED)
    jobs = [before, *acknowledged, after]
    events, logs = _events(server, "js"), {job_id: _log(server, job_id) for job_id in jobs}
    assert server.stop() == 0

    again = DevServer(disk.folder)
    try:
        assert again.client.get_job_status(jobs).job_states == {job_id: submit_pb2.SUCCEEDED for job_id in jobs}
        assert _events(again, "js") == events
        assert {job_id: _log(again, job_id) for job_id in jobs} == logs
        assert logs[acknowledged[0]] == ["job 0"]
    finally:
        again.kill()


def test_a_full_disk_refuses_new_jobs_and_queues_with_what_to_do_and_reads_go_on(disk, server):
    disk.fill(server.process.pid)
    acknowledged, refusal = submit_until_refused(server.client, "js")
    assert refusal.code() == grpc.StatusCode.INTERNAL  # Armada's answer when it can't publish a submission
    assert refusal.details().startswith(f"the embedded server cannot write its state folder {disk.folder} (since ")
    assert "so it accepts no new jobs or queues: free space on that disk" in refusal.details()
    assert "accepts new work again by itself once a write goes through" in refusal.details()
    with pytest.raises(grpc.RpcError) as queue_refused:
        server.client.create_queue(server.client.create_queue_request(name="new", priority_factor=1))
    assert queue_refused.value.code() == grpc.StatusCode.UNAVAILABLE  # Armada's, when its queue store fails
    assert queue_refused.value.details().startswith("error creating queue: the embedded server cannot write its")
    assert set(server.client.get_job_status(acknowledged).job_states) == set(acknowledged)
    assert server.client.get_queue("cli").name == "cli"


def test_a_full_disk_shows_in_the_health_services_and_on_the_console(disk, server):
    assert _health(server, "") == "SERVING"
    disk.fill(server.process.pid)
    submit_until_refused(server.client, "js")
    assert server.client.submit_health().status == armada_health.HealthCheckResponse.NOT_SERVING
    assert [_health(server, s) for s in ("", "api.Submit", "api.QueueService")] == ["NOT_SERVING"] * 3
    assert [_health(server, s) for s in ("api.Jobs", "api.Event")] == ["SERVING"] * 2  # reads go on
    said = rf"^the embedded server cannot write its state folder {disk.folder} \(since .*changes are kept in memory"
    server.output.wait_for(said)


def test_once_space_returns_the_server_takes_new_work_again_without_a_restart(disk, server):
    disk.fill(server.process.pid)
    submit_until_refused(server.client, "js")
    disk.free(server.process.pid)
    job_id = wait_until(lambda: try_submit(server.client, "js", "accepted again")[0], what="a job accepted again")
    wait_for_state(server.client, job_id, submit_pb2.SUCCEEDED)
    server.client.create_queue(server.client.create_queue_request(name="new", priority_factor=1))
    assert [_health(server, s) for s in ("", "api.Submit")] == ["SERVING", "SERVING"]
    assert server.client.submit_health().status == armada_health.HealthCheckResponse.SERVING
    server.output.wait_for(rf"^the state folder {disk.folder} can be written again after \d+ s")
