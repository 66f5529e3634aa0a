"""The embedded server lets go of what it started when it stops (issue 21, point 3): started,
used (a job run to the end, its events read) and stopped again and again, it leaves the process no
more threads, sockets or child processes than before."""

from __future__ import annotations

import threading

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient

from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

from support.job_events import event_kinds
from support.pods import item, pod, submit_one
from support.resource_counts import assert_repeats_leave_nothing_behind, held, wait_back_to
from support.waiting import wait_for_state

STARTS = 10


def _start_use_stop() -> None:
    with EmbeddedArmada(EmbeddedConfig(port=0, queues=("flyte",))) as server:
        channel = grpc.insecure_channel(server.url)
        try:
            client = ArmadaClient(channel)
            job_id = submit_one(client, "flyte", "ends", item(pod(["true"])))
            wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
            assert event_kinds(client, "flyte", "ends", job_id)[-1] == "succeeded"
        finally:
            channel.close()


def test_an_embedded_server_started_and_stopped_again_and_again_leaves_nothing_behind():
    assert_repeats_leave_nothing_behind(_start_use_stop, STARTS)


def test_the_check_fails_naming_a_thread_left_running():
    """Guards the test above (its only check is the wait): a thread its use left running fails it, by name."""
    baseline = held()
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, name="left-running", daemon=True)
    thread.start()
    try:
        with pytest.raises(AssertionError, match=r"still holds 1 more threads \(1 x left-running\)"):
            wait_back_to(baseline, timeout=0.1)
    finally:
        stop.set()
        thread.join()
