"""The view's reads, against the embedded server through Armada's own APIs."""

from __future__ import annotations

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient

from armada_flyte.connector.config.settings import resolve_settings
from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig
from armada_flyte.view.armada_reader import ArmadaReader, ArmadaReadError
from armada_flyte.view.snapshot import Gatherer

from support.full_disk import refusing_server
from support.pods import item, pod, python, submit_one
from support.waiting import wait_for_state


@pytest.fixture(scope="module")
def armada():
    with EmbeddedArmada(EmbeddedConfig(queues=("read", "empty"))) as server:
        yield server


@pytest.fixture
def client(armada):
    with grpc.insecure_channel(armada.url) as channel:
        yield ArmadaClient(channel)


@pytest.fixture
def reader(armada):
    reader = ArmadaReader(resolve_settings(armada_url=armada.url))
    yield reader
    reader.close()


def test_a_job_sets_jobs_are_read_on_from_the_last_event(client, reader):
    first = submit_one(client, "read", "grows", item(pod(["true"])))
    assert reader.job_ids("read", "grows") == [first]
    second = submit_one(client, "read", "grows", item(pod(["true"])))
    assert reader.job_ids("read", "grows") == [first, second]
    assert reader.job_ids("read", "grows") == [first, second]  # nothing new: the same jobs


def test_every_queue_is_listed(reader):
    assert {"read", "empty"} <= set(reader.queues())


def test_a_jobs_details_log_and_reports_are_read(client, reader):
    job_id = submit_one(client, "read", "logged", item(pod(python("print('hello from the pod')"))))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    details = reader.details([job_id])[job_id]
    assert (details.queue, details.jobset) == ("read", "logged")
    assert "hello from the pod" in reader.log(job_id, details.namespace)
    assert job_id in reader.job_report(job_id)
    assert isinstance(reader.queue_report("read"), str)


def test_a_failed_read_says_which_call_and_why(reader):
    with pytest.raises(ArmadaReadError, match=r"GetJobSetEvents at .* failed: NOT_FOUND"):
        reader.job_ids("no-such-queue", "js")


def test_the_overview_shows_what_it_could_read_and_says_what_it_could_not(client, reader):
    job_id = submit_one(client, "read", "shown", item(pod(["true"])))
    overview = Gatherer(reader, lambda: [("read", "shown"), ("no-such-queue", "js")]).overview()
    assert [row.job_id for row in overview.rows if row.job_set == "shown"] == [job_id]
    assert any("job set js of queue no-such-queue" in problem for problem in overview.problems)


def test_the_embedded_server_lists_its_job_sets_newest_first(client, reader):
    older = submit_one(client, "read", "listed-older", item(pod(["true"])))
    newer = submit_one(client, "read", "listed-newer", item(pod(["true"])))
    listed = [(s.queue, s.job_set, s.newest_job) for s in reader.listed_job_sets()]
    assert listed.index(("read", "listed-newer", newer)) < listed.index(("read", "listed-older", older))


def test_the_overview_of_the_embedded_server_follows_every_job_set_it_holds(client, reader):
    job_id = submit_one(client, "read", "never-named", item(pod(["true"])))
    overview = Gatherer(reader, lambda: []).overview()
    assert job_id in [row.job_id for row in overview.rows]
    assert overview.following.startswith("every job set this Armada holds")


def test_an_armada_that_lists_no_job_sets_is_followed_by_those_given_and_the_page_says_so(reader, monkeypatch):
    monkeypatch.setattr(reader, "listed_job_sets", lambda: None)  # as a real Armada answers UNIMPLEMENTED
    overview = Gatherer(reader, lambda: [("read", "given")], source="given with --job-set").overview()
    assert {row.job_set for row in overview.rows} <= {"given"}
    assert overview.following.startswith("1 job set(s) given with --job-set: this Armada's gRPC API cannot list")


def test_the_overview_says_why_a_server_whose_state_cannot_be_written_takes_no_new_work(tmp_path):
    with refusing_server(tmp_path) as server:
        reader = ArmadaReader(resolve_settings(armada_url=server.url))
        try:
            problems = Gatherer(reader, lambda: []).overview().problems
        finally:
            reader.close()
    said = f"Armada at {server.url} reports NOT_SERVING: the embedded server cannot write its state folder"
    assert problems[0].startswith(said)
    assert "; free space on that disk" in problems[0]


def test_the_embedded_server_tells_where_its_view_serves(armada, reader):
    assert reader.listing().view == ""
    armada.about["view"] = "http://127.0.0.1:1234/"
    try:
        assert reader.listing().view == "http://127.0.0.1:1234/"
    finally:
        armada.about.pop("view")
