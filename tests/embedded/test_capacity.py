"""Scheduling against capacity, on small clusters of the test's own: waiting, priority, fair share, gangs.

A job that fits a node but not right now stays QUEUED (no timeout) and is placed as soon as a
run ends and gives its capacity back.
"""

from __future__ import annotations

import pathlib

import pytest
from armada_client.armada import submit_pb2

from armada_flyte.embedded.scheduling import gang_fit
from armada_flyte.pod_runner.process import ProcessPodRunner

from support.pods import (
    ARCH,
    ARM64_TOLERATION,
    cluster,
    gang,
    item,
    node_set,
    pod,
    preemptible,
    runs_until_file_exists,
    sleeper,
    submit_one,
)
from support.waiting import job_error, state_of, wait_for_a_scheduling_pass, wait_for_state

pytestmark = pytest.mark.embedded_only

QUEUE = "conformance"
QUEUED, RUNNING, SUCCEEDED, REJECTED = submit_pb2.QUEUED, submit_pb2.RUNNING, submit_pb2.SUCCEEDED, submit_pb2.REJECTED
PLACED = (submit_pb2.LEASED, submit_pb2.PENDING, submit_pb2.RUNNING, submit_pb2.SUCCEEDED)


def submit_all(client, items) -> list[str]:
    return [i.job_id for i in client.submit_jobs(QUEUE, "js", items).job_response_items]


def one_busy_cpu(own_armada):
    """A cluster of one node with one cpu, held by a running (preemptible) job: returns the client and that job."""
    _, client = own_armada(cluster(node_set("amd64", nodes=1, cpu="1")))
    blocker = submit_one(client, QUEUE, "js", item(preemptible(sleeper(cpu="1"))))
    wait_for_state(client, blocker, RUNNING)
    return client, blocker


def test_a_job_that_fits_but_not_now_waits_queued_then_runs(own_armada) -> None:
    client, blocker = one_busy_cpu(own_armada)
    waiting = submit_one(client, QUEUE, "js", item(pod(cpu="1")))
    wait_for_a_scheduling_pass(client, QUEUE, "js")
    assert state_of(client, waiting) == QUEUED
    client.cancel_jobs(QUEUE, "js", blocker)
    wait_for_state(client, waiting, SUCCEEDED)


def test_capacity_comes_back_when_a_job_ends_by_itself(own_armada, pods_tmp_path: pathlib.Path) -> None:
    _, client = own_armada(cluster(node_set("amd64", nodes=1, cpu="1")))
    release = pods_tmp_path / "release"
    first = submit_one(client, QUEUE, "js", item(runs_until_file_exists(str(release), cpu="1")))
    wait_for_state(client, first, RUNNING)
    second = submit_one(client, QUEUE, "js", item(pod(cpu="1")))
    wait_for_a_scheduling_pass(client, QUEUE, "js")
    assert state_of(client, second) == QUEUED
    release.touch()
    wait_for_state(client, first, SUCCEEDED)
    wait_for_state(client, second, SUCCEEDED)


def test_lower_priority_number_goes_first(own_armada) -> None:
    client, blocker = one_busy_cpu(own_armada)
    later = submit_one(client, QUEUE, "js", item(sleeper(cpu="1"), priority=5))
    sooner = submit_one(client, QUEUE, "js", item(sleeper(cpu="1"), priority=1))
    wait_for_a_scheduling_pass(client, QUEUE, "js")
    client.cancel_jobs(QUEUE, "js", blocker)
    wait_for_state(client, sooner, RUNNING)
    assert state_of(client, later) == QUEUED


def test_reprioritizing_a_waiting_job_moves_it_ahead(own_armada) -> None:
    client, blocker = one_busy_cpu(own_armada)
    first = submit_one(client, QUEUE, "js", item(sleeper(cpu="1"), priority=1))
    second = submit_one(client, QUEUE, "js", item(sleeper(cpu="1"), priority=2))
    client.reprioritize_jobs(0, [second], "js", QUEUE)
    wait_for_a_scheduling_pass(client, QUEUE, "js")
    client.cancel_jobs(QUEUE, "js", blocker)
    wait_for_state(client, second, RUNNING)
    assert state_of(client, first) == QUEUED


def test_queues_share_freed_capacity_fairly(own_armada) -> None:
    armada, client = own_armada(cluster(node_set("amd64", nodes=1, cpu="4")))
    for name in ("team-a", "team-b"):
        armada.create_queue(name)
    blocker = submit_one(client, QUEUE, "js", item(sleeper(cpu="4")))
    wait_for_state(client, blocker, RUNNING)
    jobs = {
        name: [submit_one(client, name, "js", item(sleeper(cpu="1"))) for _ in range(4)]
        for name in ("team-a", "team-b")
    }
    wait_for_a_scheduling_pass(client, QUEUE, "js")
    client.cancel_jobs(QUEUE, "js", blocker)
    everyone = jobs["team-a"] + jobs["team-b"]
    wait_for_state(client, everyone[0], *PLACED)
    states = client.get_job_status(everyone).job_states
    placed = {name: sum(states[j] in PLACED for j in ids) for name, ids in jobs.items()}
    assert placed == {"team-a": 2, "team-b": 2}
    for name in ("team-a", "team-b"):
        client.cancel_jobset(name, "js", [])


def test_a_gang_waits_whole_until_it_fits_then_runs_together(own_armada) -> None:
    _, client = own_armada(cluster(node_set("amd64", nodes=2, cpu="2")))
    blocker = submit_one(client, QUEUE, "js", item(sleeper(cpu="2")))
    wait_for_state(client, blocker, RUNNING)
    members = [item(sleeper(cpu="1"), annotations=gang("trio", 3)) for _ in range(3)]
    trio = [i.job_id for i in client.submit_jobs(QUEUE, "js", members).job_response_items]
    wait_for_a_scheduling_pass(client, QUEUE, "js")
    assert set(client.get_job_status(trio).job_states.values()) == {QUEUED}, "2 of 3 would fit: none may start"
    client.cancel_jobs(QUEUE, "js", blocker)
    for job_id in trio:
        wait_for_state(client, job_id, RUNNING)


def test_gang_members_submitted_apart_wait_for_each_other(own_armada) -> None:
    _, client = own_armada(cluster(node_set("amd64", nodes=1, cpu="2")))
    first = submit_one(client, QUEUE, "js", item(sleeper(cpu="1"), annotations=gang("pair", 2)))
    wait_for_a_scheduling_pass(client, QUEUE, "js")
    assert state_of(client, first) == QUEUED
    second = submit_one(client, QUEUE, "js", item(sleeper(cpu="1"), annotations=gang("pair", 2)))
    wait_for_state(client, first, RUNNING)
    wait_for_state(client, second, RUNNING)


def test_a_member_cancelled_before_its_gang_runs_leaves_it_and_a_new_member_takes_its_place(own_armada) -> None:
    _, client = own_armada(cluster(node_set("amd64", nodes=1, cpu="2")))
    blocker = submit_one(client, QUEUE, "js", item(sleeper(cpu="2")))
    wait_for_state(client, blocker, RUNNING)
    leaving, staying = submit_all(client, [item(pod(cpu="1"), annotations=gang("pair", 2))] * 2)
    client.cancel_jobs(QUEUE, "js", leaving)
    wait_for_a_scheduling_pass(client, QUEUE, "js")
    assert state_of(client, staying) == QUEUED, (
        "as in Armada, the rest of the gang waits for a member to take its place"
    )
    replacement = submit_one(client, QUEUE, "js", item(pod(cpu="1"), annotations=gang("pair", 2)))
    client.cancel_jobs(QUEUE, "js", blocker)
    wait_for_state(client, staying, SUCCEEDED)
    wait_for_state(client, replacement, SUCCEEDED)


def test_a_gang_that_was_placed_cannot_be_joined(own_armada) -> None:
    _, client = own_armada(cluster(node_set("amd64", nodes=1, cpu="2")))
    pair = gang("pair", 2)
    quick, slow = submit_all(client, [item(pod(cpu="1"), annotations=pair), item(sleeper(cpu="1"), annotations=pair)])
    wait_for_state(client, quick, SUCCEEDED)
    late = submit_one(client, QUEUE, "js", item(pod(cpu="1"), annotations=gang("pair", 2)))
    wait_for_state(client, late, REJECTED)
    assert "gang pair was already placed" in job_error(client, late)
    assert state_of(client, slow) == RUNNING


def test_a_gang_lands_on_nodes_sharing_its_uniformity_label(own_armada) -> None:
    small_amd64 = node_set("amd64", nodes=1, cpu="1")
    roomy_arm64 = node_set("arm64", nodes=2, cpu="1", arch="arm64", tainted=True)
    armada, client = own_armada(cluster(small_amd64, roomy_arm64))
    members = [
        item(sleeper(cpu="1", tolerations=[ARM64_TOLERATION]), annotations=gang("pair", 2, ARCH)) for _ in range(2)
    ]
    pair = [i.job_id for i in client.submit_jobs(QUEUE, "js", members).job_response_items]
    for job_id in pair:
        wait_for_state(client, job_id, RUNNING)
    assert {armada.job(job_id).node_group for job_id in pair} == {"arm64"}


def test_a_gang_that_could_never_fit_is_rejected(own_armada) -> None:
    _, client = own_armada(cluster(node_set("amd64", nodes=2, cpu="2")))
    members = [item(pod(cpu="2"), annotations=gang("too-big", 3)) for _ in range(3)]
    ids = [i.job_id for i in client.submit_jobs(QUEUE, "js", members).job_response_items]
    for job_id in ids:
        wait_for_state(client, job_id, REJECTED)
    assert "gang too-big of 3 jobs does not fit" in client.get_job_errors(ids[:1]).job_errors[ids[0]]


def uneven_pair(own_armada):
    """Nodes of 2 and 1 cpu, and a gang of a 1-cpu and a 2-cpu member (in that order): it fits only largest first."""
    _, client = own_armada(cluster(node_set("big", nodes=1, cpu="2"), node_set("small", nodes=1, cpu="1")))
    members = [item(pod(cpu="1"), annotations=gang("uneven", 2)), item(pod(cpu="2"), annotations=gang("uneven", 2))]
    return client, [i.job_id for i in client.submit_jobs(QUEUE, "js", members).job_response_items]


def test_a_gang_that_fits_only_largest_member_first_runs(own_armada) -> None:
    client, ids = uneven_pair(own_armada)
    for job_id in ids:
        wait_for_state(client, job_id, SUCCEEDED)


def test_a_gang_the_search_cannot_decide_waits_instead_of_being_rejected(own_armada, monkeypatch) -> None:
    monkeypatch.setattr(gang_fit, "SEARCH_STEPS", 1)
    client, ids = uneven_pair(own_armada)
    wait_for_a_scheduling_pass(client, QUEUE, "js")
    assert set(client.get_job_status(ids).job_states.values()) == {QUEUED}


def test_preempting_a_running_job_ends_it_preempted_and_frees_its_node(own_armada) -> None:
    client, victim = one_busy_cpu(own_armada)
    waiting = submit_one(client, QUEUE, "js", item(pod(cpu="1")))
    client.preempt_jobs(QUEUE, "js", victim)
    wait_for_state(client, victim, submit_pb2.PREEMPTED)
    wait_for_state(client, waiting, SUCCEEDED)


class _FirstLaunchFails(ProcessPodRunner):
    """A process pod runner that can't start its first pod (as when no thread can be started)."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    def launch(self, pod, reporter) -> None:
        if not self.failed:
            self.failed = True
            raise RuntimeError("can't start new thread")
        super().launch(pod, reporter)


def test_a_pod_the_executor_cannot_launch_fails_and_frees_its_node(own_armada) -> None:
    _, client = own_armada(cluster(node_set("amd64", nodes=1, cpu="1")), pod_runner=_FirstLaunchFails())
    first, second = [
        i.job_id for i in client.submit_jobs(QUEUE, "js", [item(pod(cpu="1")), item(pod(cpu="1"))]).job_response_items
    ]
    wait_for_state(client, first, submit_pb2.FAILED, timeout=5)
    assert "executor failed to launch the pod: can't start new thread" in job_error(client, first)
    wait_for_state(client, second, SUCCEEDED, timeout=5)
