"""The embedded server's state across restarts on one state folder (`state_dir`), in-process.

`tests/admin/test_dev_command.py` does the same through `armada-flyte dev` and `kill -9`.
"""

from __future__ import annotations

import sqlite3
import stat
import threading

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient
from armada_client.log_client import JobLogClient

from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig
from armada_flyte.embedded.store import state_file
from armada_flyte.embedded.store.persistence import SqliteStore, StateDirInUse

from support.job_events import job_of, job_set_events, kind
from support.pods import item, pod, python, submit_one
from support.waiting import job_error, wait_for_state, wait_until

pytestmark = pytest.mark.embedded_only


def restartable(state_dir):
    server = EmbeddedArmada(EmbeddedConfig(state_dir=state_dir)).start()
    return server, grpc.insecure_channel(server.url)


def test_queues_jobs_events_and_logs_outlive_the_server(tmp_path) -> None:
    server, channel = restartable(tmp_path)
    client = ArmadaClient(channel)
    client.create_queue(client.create_queue_request(name="kept", priority_factor=2))
    done_item = item(pod(python("print('hello from before')")))
    done_item.client_id = "once"
    done = submit_one(client, "flyte", "js", done_item)
    wait_for_state(client, done, submit_pb2.SUCCEEDED)
    before = [(m.id, kind(m)) for m in job_set_events(client, "flyte", "js")]
    channel.close()
    server.stop()

    server, channel = restartable(tmp_path)
    try:
        client = ArmadaClient(channel)
        assert client.get_queue("kept").priority_factor == 2
        assert client.get_job_status([done]).job_states[done] == submit_pb2.SUCCEEDED
        assert [(m.id, kind(m)) for m in job_set_events(client, "flyte", "js")] == before
        assert [line.line for line in JobLogClient(server.url, done, disable_ssl=True).logs()] == ["hello from before"]
        details = client.get_job_details([done]).job_details[done]
        assert details.job_runs[0].node == server.job(done).node and details.job_runs[0].state == 4  # SUCCEEDED
        # A client id stored before the restart still names its job (submit/submit.go deduplication).
        assert submit_one(client, "flyte", "js", done_item) == done
        later = submit_one(client, "flyte", "js", item(pod(python("pass"))))
        wait_for_state(client, later, submit_pb2.SUCCEEDED)
        after = [m.id for m in job_set_events(client, "flyte", "js", from_id=before[-1][0])]
        assert after and all(message_id > before[-1][0] for message_id in after)
    finally:
        channel.close()
        server.stop()


def test_a_job_running_at_stop_fails_as_a_missing_pod_after_the_restart(tmp_path) -> None:
    """Pods die with the server; at the next start their jobs end as Armada's executor ends runs whose
    pods vanished (internal/executor/service/pod_issue_handler.go), not by the kill's exit code."""
    server, channel = restartable(tmp_path)
    client = ArmadaClient(channel)
    running = submit_one(client, "flyte", "js", item(pod(python("import time; time.sleep(300)"))))
    wait_for_state(client, running, submit_pb2.RUNNING)
    channel.close()
    server.stop()

    server, channel = restartable(tmp_path)
    try:
        client = ArmadaClient(channel)
        wait_for_state(client, running, submit_pb2.FAILED)
        assert job_error(client, running) == "Pod is unexpectedly missing in Kubernetes"
        kinds = [kind(m) for m in job_set_events(client, "flyte", "js") if job_of(m) == running]
        assert kinds == ["submitted", "queued", "leased", "pending", "running", "failed"]
    finally:
        channel.close()
        server.stop()


def test_a_queued_job_whose_nodes_left_across_a_restart_stays_queued_as_armadas_validated_jobs_do(tmp_path) -> None:
    """Armada checks once that some node could ever hold a job and keeps that (its scheduler's JobValidated,
    v0.22.7 internal/scheduler/scheduler.go): a job whose nodes leave afterwards stays queued, its report saying
    why. A restart on a cluster without them does the same here, rather than checking the job again."""
    from armada_flyte.cluster.cluster_file import Cluster
    from armada_flyte.protos import scheduler_reporting_pb2 as reporting_pb2
    from armada_flyte.protos import scheduler_reporting_pb2_grpc as reporting_pb2_grpc

    from support.pods import arm64_pod, cluster, node_set

    amd64 = node_set("amd64", cpu="2")
    both = Cluster.from_mapping(cluster(amd64, node_set("arm64", cpu="2", arch="arm64", tainted=True)))
    server = EmbeddedArmada(EmbeddedConfig(state_dir=tmp_path, cluster=both)).start()
    channel = grpc.insecure_channel(server.url)
    client = ArmadaClient(channel)
    request = client.create_queue_request("held", priority_factor=1.0)
    request.cordoned = True  # its jobs wait, checked but never placed
    client.create_queue(request)
    waiting = submit_one(client, "held", "js", item(arm64_pod(python("pass"))))
    after = submit_one(client, "flyte", "js", item(pod(python("pass"))))  # a later pass: the first was checked
    wait_for_state(client, after, submit_pb2.SUCCEEDED)
    channel.close()
    server.stop()

    server = EmbeddedArmada(EmbeddedConfig(state_dir=tmp_path, cluster=Cluster.from_mapping(cluster(amd64)))).start()
    channel = grpc.insecure_channel(server.url)
    try:
        client = ArmadaClient(channel)
        client.queue_stub.UncordonQueue(submit_pb2.QueueUncordonRequest(name="held"))
        reports = reporting_pb2_grpc.SchedulerReportingStub(channel)

        def report() -> str:
            text = reports.GetJobReport(reporting_pb2.JobReportRequest(job_id=waiting), timeout=10).report
            return text if "Number of nodes in cluster: 1" in text else ""

        text = wait_until(report, what="a scheduling round that considered the job on the amd64-only cluster")
        assert "1:\tnode does not match pod NodeSelector: required label kubernetes.io/arch = arm64" in text, text
        assert "(node group amd64)" in text, text
        assert client.get_job_status([waiting]).job_states[waiting] == submit_pb2.QUEUED
    finally:
        channel.close()
        server.stop()


def test_ended_jobs_past_the_retention_are_dropped_with_their_events_and_logs(tmp_path) -> None:
    server, channel = restartable(tmp_path)
    client = ArmadaClient(channel)
    done = submit_one(client, "flyte", "js", item(pod(python("print('x')"))))
    wait_for_state(client, done, submit_pb2.SUCCEEDED)
    waiting = submit_one(client, "flyte", "js", item(pod(cpu="100")))  # fits no node: REJECTED, also ended
    wait_for_state(client, waiting, submit_pb2.REJECTED)
    run_id = server.plane.queries.find_job(done).latest_run.id
    assert server.logs(done) == ["x"]
    channel.close()
    server.stop()

    store = SqliteStore(tmp_path, retention_seconds=0)
    try:
        saved = store.load()
        assert saved.jobs == [] and saved.events == []
        assert [q.name for q in saved.queues] == ["flyte"]  # queues are not jobs: they stay
        assert store.read_log(run_id) == []
    finally:
        store.close()


def test_a_pod_log_counts_as_saved_only_once_its_write_went_through(tmp_path, monkeypatch) -> None:
    """The writes fail (as on a full disk: `tests/embedded/test_state_full_disk.py` fills a real one) until
    a failed batch has carried the ended run's log; the batch written after them must carry it again."""
    write, failing, tried = state_file.write, threading.Event(), []

    def failing_write(db: sqlite3.Connection, rows: state_file.Rows) -> None:
        if failing.is_set():
            tried.extend(run_id for run_id, _, _ in rows.logs)
            raise sqlite3.OperationalError("database or disk is full")
        write(db, rows)

    monkeypatch.setattr(state_file, "write", failing_write)
    server, channel = restartable(tmp_path)
    client = ArmadaClient(channel)
    failing.set()
    done = submit_one(client, "flyte", "js", item(pod(python("print('written late')"))))
    wait_for_state(client, done, submit_pb2.SUCCEEDED)
    run_id = server.plane.queries.find_job(done).latest_run.id
    wait_until(lambda: run_id in tried, what="a failed write with the run's log")
    failing.clear()
    channel.close()
    server.stop()

    server, channel = restartable(tmp_path)
    try:
        assert [line.line for line in JobLogClient(server.url, done, disable_ssl=True).logs()] == ["written late"]
    finally:
        channel.close()
        server.stop()


def test_one_server_per_state_folder(tmp_path) -> None:
    with EmbeddedArmada(EmbeddedConfig(state_dir=tmp_path)):
        with pytest.raises(StateDirInUse, match="another armada-flyte dev server uses this state folder"):
            EmbeddedArmada(EmbeddedConfig(state_dir=tmp_path)).start()


def test_servers_without_a_state_folder_share_nothing() -> None:
    with EmbeddedArmada() as first:
        first.create_queue("only-here")
    with EmbeddedArmada() as second:
        assert "only-here" not in second.plane.queues


def test_a_new_state_folder_and_its_files_are_for_their_owner_alone(tmp_path) -> None:
    """The folder holds every job's spec, events and pod logs: other users of the machine read none of it."""
    folder = tmp_path / "state"
    server, channel = restartable(folder)
    try:
        client = ArmadaClient(channel)
        wait_for_state(client, submit_one(client, "flyte", "js", item(pod(python("print('x')")))), submit_pb2.SUCCEEDED)
    finally:
        channel.close()
        server.stop()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    shared = {
        path.name: oct(stat.S_IMODE(path.stat().st_mode)) for path in folder.iterdir() if path.stat().st_mode & 0o077
    }
    assert not shared, f"files other users can read: {shared}"


def test_a_state_file_left_readable_by_an_older_version_is_narrowed(tmp_path) -> None:
    (tmp_path / "state.sqlite3").touch(mode=0o644)
    store = SqliteStore(tmp_path)
    store.close()
    assert stat.S_IMODE((tmp_path / "state.sqlite3").stat().st_mode) == 0o600
