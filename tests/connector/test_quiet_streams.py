"""A connection to Armada that stops forwarding without closing can't freeze job states: the connector's
event streams live at most `status_stream_max_age_seconds` (then are opened again from their last message,
their jobs polled in bulk meanwhile), and the jobs of a live stream are checked in bulk once a
`status_live_check_seconds`. Channels ping Armada within its keepalive enforcement policy.

Real parts: `c0` as a process, the embedded Armada server running a real pod process, and the counting
proxy (`benchmarks/counting_proxy.py`) between them, told to hold the streams' messages without closing
them (unary calls still pass), as a proxy or a load balancer that lost its upstream would.
"""

from __future__ import annotations

import pathlib
import sys
import threading
import time
from typing import Iterator

import grpc
import pytest
from armada_client.armada import event_pb2, event_pb2_grpc
from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

from armada_flyte.connector.armada.channels import authorization_metadata, keepalive_options, open_channel
from armada_flyte.connector.config.settings_groups import ArmadaConnection

from support.armada_channels import bed_authorization
from support.armada_templates import execution_metadata, python_template
from support.c0_service import TERMINAL, poll_until_done, running_c0
from support.pods import unique

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))
from counting_proxy import CountingProxy, counting_proxy  # noqa: E402

ARMADA_KEEPALIVE_MIN_SECONDS = 10
"""Real Armada's server (v0.22.7, config/server/config.yaml): keepaliveEnforcementPolicy minTime 10s,
permitWithoutStream true; a client pinging more often gets GOAWAY too_many_pings."""
SHORT = 4.0
"""The bound under test (stream age, or live check period), short for the test."""
MARGIN = 25.0
"""Time past SHORT for the pod to end and c0 to poll, on a loaded machine (a bound on failures only)."""

WAIT_THEN_EXIT_0 = """
import os, sys, time
go = sys.argv[sys.argv.index("--go") + 1]
while not os.path.exists(go):
    time.sleep(0.05)
"""


@pytest.fixture
def proxy(armada) -> Iterator[CountingProxy]:
    with counting_proxy(armada.url) as running:
        yield running


@pytest.mark.pure
def test_keepalive_pings_within_armadas_enforcement_policy():
    options = dict(keepalive_options(ArmadaConnection()))
    assert options["grpc.keepalive_time_ms"] >= ARMADA_KEEPALIVE_MIN_SECONDS * 1000
    assert options["grpc.keepalive_permit_without_calls"] == 1  # Armada permits pings without a stream
    assert options["grpc.http2.max_pings_without_data"] == 0  # a silent watch stays checked
    with pytest.raises(ValueError, match="grpc_keepalive_seconds"):
        ArmadaConnection(grpc_keepalive_seconds=5)
    with pytest.raises(ValueError, match="grpc_keepalive_seconds"):  # gRPC takes milliseconds in a C int
        ArmadaConnection(grpc_keepalive_seconds=3_000_000)


@pytest.mark.pure
def test_only_the_armada_api_channel_pings(monkeypatch):
    """Armada's Binoculars allows a ping every 5 minutes and none without a call (its config.yaml): pinged every
    30 s, its connections would be closed with too_many_pings."""
    from armada_flyte.connector.armada import channels

    seen = {}
    monkeypatch.setattr(grpc, "insecure_channel", lambda target, options: seen.setdefault(target, dict(options)))
    connection = ArmadaConnection(armada_url="127.0.0.1:1", binoculars_url="127.0.0.1:2")
    channels.open_channel(connection, "127.0.0.1:1", aio=False)
    channels.open_channel(connection, "127.0.0.1:2", aio=False)
    assert "grpc.keepalive_time_ms" in seen["127.0.0.1:1"]
    assert "grpc.keepalive_time_ms" not in seen["127.0.0.1:2"]


def test_a_silent_watch_pinged_as_often_as_armada_allows_is_not_sent_away(armada):
    """Pings every 10 s (Armada's minTime) on a watch that carries nothing: the server takes them (without
    its policy, gRPC's default refuses them, GOAWAY too_many_pings after the third, and the stream breaks)."""
    connection = ArmadaConnection(armada_url=armada.url, grpc_keepalive_seconds=ARMADA_KEEPALIVE_MIN_SECONDS)
    channel = open_channel(connection, armada.url, aio=False)
    request = event_pb2.JobSetRequest(id="silent-watch", queue="flyte", watch=True)
    stream = event_pb2_grpc.EventStub(channel).GetJobSetEvents(
        request, metadata=authorization_metadata(bed_authorization())
    )
    ended: list[object] = []

    def read() -> None:
        try:
            for _ in stream:
                pass
            ended.append("the server ended the stream")
        except grpc.RpcError as exc:
            ended.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        reader.join(4.5 * ARMADA_KEEPALIVE_MIN_SECONDS)  # four pings: one past gRPC's default strike limit
        assert not ended, ended
    finally:
        stream.cancel()
        reader.join(10)
        channel.close()


def _ends_while_streams_are_held(
    proxy: CountingProxy, armada_url: str, tmp_path: pathlib.Path, go: pathlib.Path, **settings: str
) -> tuple[float, str]:
    """Seconds from the pod's end to c0 reporting the task ended, the streams held from before the end."""
    env = {
        "ARMADA_URL": proxy.address,
        "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded",
        **{f"ARMADA_FLYTE_{name.upper()}": value for name, value in settings.items()},
    }
    with running_c0(env, tmp_path / "c0.log") as c0:
        template = python_template(WAIT_THEN_EXIT_0)
        template.container.args.extend(["--go", str(go)])
        request = connector_pb2.CreateTaskRequest(
            template=template, output_prefix="", task_execution_metadata=execution_metadata(run=go.name)
        )
        meta = c0.CreateTask(request, timeout=60).resource_meta
        poll_until_done(c0, meta, {TaskExecution.RUNNING}, timeout=120)
        proxy.freeze_streams()
        go.touch()
        ended = time.monotonic()
        resource = poll_until_done(c0, meta, TERMINAL, timeout=SHORT + MARGIN)
        return time.monotonic() - ended, resource.message


def test_a_stream_gone_quiet_without_closing_holds_states_no_longer_than_the_stream_age(
    armada, proxy, tmp_path, pods_tmp_path
):
    seconds, message = _ends_while_streams_are_held(
        proxy,
        armada.url,
        tmp_path,
        pods_tmp_path / unique("quiet-age"),
        status_stream_max_age_seconds=str(SHORT),
        status_live_check_seconds="3600",  # only the stream's age can end the wait
    )
    assert "succeeded" in message, message
    assert seconds < SHORT + MARGIN


def test_a_live_streams_jobs_are_checked_in_bulk_once_a_period(armada, proxy, tmp_path, pods_tmp_path):
    seconds, message = _ends_while_streams_are_held(
        proxy,
        armada.url,
        tmp_path,
        pods_tmp_path / unique("quiet-check"),
        status_stream_max_age_seconds="3600",  # only the bulk check can end the wait
        status_live_check_seconds=str(SHORT),
    )
    assert "succeeded" in message, message
    assert seconds < SHORT + MARGIN
