"""The shared status view against the embedded Armada server over gRPC; RPCs are counted AT the server.

Armada's Event service serves one stream per (queue, job set), resumable from a message id
(`internal/server/event/event.go`); Jobs.GetJobStatus takes at most 500 ids per call.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import socket
import threading
import time
from types import SimpleNamespace

import grpc
import pytest
from armada_client.client import ArmadaClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core
from armada_client.k8s.io.apimachinery.pkg.api.resource import generated_pb2 as resource
from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

import armada_flyte
from armada_flyte.armada_names import JobState
from armada_flyte.connector.config.settings import resolve_settings
from armada_flyte.connector.model.metadata import ArmadaJobMetadata
from armada_flyte.connector.poll.status_view import GRPC_DRAIN_SECONDS, StatusView
from armada_flyte.connector.service import ArmadaConnector

from support.armada_templates import execution_metadata, python_template, run
from support.c0_service import ARMADA_TASKS, running_c0
from support.flaky_proxy import FlakyProxy
from support.waiting import wait_until


@pytest.fixture
def paused_armada():
    """Leases stay LEASED while paused: jobs stay in flight for as long as a test needs."""
    from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

    with EmbeddedArmada(EmbeddedConfig(port=0, queues=("flyte",), paused=True)) as server:
        yield server


def _submit(armada, job_set: str, count: int) -> list[str]:
    client = ArmadaClient(grpc.insecure_channel(armada.url))
    quantity = {"cpu": resource.Quantity(string="10m"), "memory": resource.Quantity(string="64Mi")}
    container = core.Container(
        name="main",
        image="busybox",
        command=["true"],
        resources=core.ResourceRequirements(requests=quantity, limits=quantity),
    )
    pod = core.PodSpec(containers=[container], restartPolicy="Never")
    ids: list[str] = []
    for start in range(0, count, 100):
        items = [
            client.create_job_request_item(pod_spec=pod, namespace="default") for _ in range(min(100, count - start))
        ]
        ids += [i.job_id for i in client.submit_jobs("flyte", job_set, items).job_response_items]
    return ids


def _view(armada, **settings) -> StatusView:
    return StatusView(resolve_settings(armada_url=armada.url, **settings))


def test_1200_gets_through_c0_spread_over_a_round_cost_at_most_3_status_calls(paused_armada, tmp_path):
    """Jobs c0 never created (a restarted c0): the first get of each job set starts its stream,
    and the rest of the round is answered from it."""
    job_sets = [f"run-{i}" for i in range(12)]
    metas = [
        ArmadaJobMetadata(job_id=job_id, job_set_id=job_set, queue="flyte", submitted_at=time.time()).encode()
        for job_set in job_sets
        for job_id in _submit(paused_armada, job_set, 100)
    ]
    env = {"ARMADA_URL": paused_armada.url, "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded"}
    with running_c0(env, tmp_path / "c0.log") as c0:
        before = paused_armada.calls.count("GetJobStatus")
        spread = 1.5 / len(metas)
        started = time.monotonic()
        calls = []
        for i, meta in enumerate(metas):
            calls.append(
                c0.GetTask.future(
                    connector_pb2.GetTaskRequest(resource_meta=meta, task_category=ARMADA_TASKS), timeout=30
                )
            )
            time.sleep(max(0.0, started + i * spread - time.monotonic()))
        phases = [call.result().resource.phase for call in calls]
        status_calls = paused_armada.calls.count("GetJobStatus") - before
    assert len(phases) == 1200 and set(phases) == {TaskExecution.QUEUED}  # none failed, none lost
    print(f"1200 gets through c0: {status_calls} GetJobStatus calls at the server")
    assert status_calls <= 3, status_calls


async def _fan_out(connector: ArmadaConnector, run_name: str, count: int) -> list[ArmadaJobMetadata]:
    """`count` concurrent creates in one run (one job set)."""
    template = python_template("pass", cpu="10m", memory="16Mi")
    return await asyncio.gather(
        *(
            connector.create(template, "s3://b/raw", task_execution_metadata=execution_metadata(run_name, f"a{i}"))
            for i in range(count)
        )
    )


def test_creates_start_no_stream_and_the_first_gets_read_the_job_sets_events_in_one_catch_up(paused_armada):
    """A fan-out's creates leave their job set's events unread (its stream's messages would share c0's loop with
    the creates still coming); the first get, within the refresh period, starts the stream, and every get is
    answered from it, none by GetJobStatus, none lost."""
    connector = ArmadaConnector(
        resolve_settings(armada_url=paused_armada.url, node_groups_preset="embedded", status_refresh_seconds=60)
    )

    async def fan_out_then_get() -> tuple[list[ArmadaJobMetadata], tuple[int, int], int, list[int]]:
        metas = await _fan_out(connector, "fan", 200)
        held, streams = (await connector.context()).view.size(), paused_armada.calls.count("GetJobSetEvents")
        phases = [resource.phase for resource in await asyncio.gather(*(connector.get(meta) for meta in metas))]
        return metas, held, streams, phases

    status_before = paused_armada.calls.count("GetJobStatus")
    try:
        metas, held_after_creates, streams_after_creates, phases = run(fan_out_then_get())
    finally:
        run(connector.close())
    assert len({meta.job_id for meta in metas}) == 200 and all(meta.job_id for meta in metas)
    assert (held_after_creates, streams_after_creates) == ((0, 1), 0)  # the job set is known, its events unread
    assert set(phases) == {TaskExecution.QUEUED} and len(phases) == 200
    assert paused_armada.calls.count("GetJobSetEvents") >= 1
    assert paused_armada.calls.count("GetJobStatus") == status_before


def test_a_job_sets_stream_starts_by_itself_a_refresh_period_after_its_last_create(paused_armada):
    """Unasked, the job set's stream starts once no job was submitted to it for a refresh period, so the gets
    that come later are answered from memory at once."""
    connector = ArmadaConnector(
        resolve_settings(armada_url=paused_armada.url, node_groups_preset="embedded", status_refresh_seconds=0.3)
    )
    try:
        metas = run(_fan_out(connector, "settles", 50))
        view = run(connector.context()).view
        wait_until(lambda: view.streaming("flyte", "flyte-settles"), timeout=30, what="the job set's stream")
        wait_until(lambda: view.size()[0] >= 50, timeout=30, what="the stream's catch-up of the 50 jobs")
        status_before = paused_armada.calls.count("GetJobStatus")

        async def get_all() -> list[int]:
            return [resource.phase for resource in await asyncio.gather(*(connector.get(meta) for meta in metas))]

        phases = run(get_all())
    finally:
        run(connector.close())
    assert set(phases) == {TaskExecution.QUEUED} and len(phases) == 50
    assert paused_armada.calls.count("GetJobStatus") == status_before


def test_a_job_the_view_missed_is_still_answered(paused_armada):
    """The metadata names a job set the job isn't in: its stream never sees the job, so one bulk call answers."""
    (job_id,) = _submit(paused_armada, "real-set", 1)
    view = _view(paused_armada)
    try:
        before = paused_armada.calls.count("GetJobStatus")
        state = asyncio.run(view.state_of(job_id, "flyte", "another-set"))
        assert state in (JobState.QUEUED, JobState.LEASED)
        assert paused_armada.calls.count("GetJobStatus") - before == 1
        # known now: asking again costs nothing
        asyncio.run(view.state_of(job_id, "flyte", "another-set"))
        assert paused_armada.calls.count("GetJobStatus") - before == 1
    finally:
        view.close()


def test_gets_on_many_loops_and_threads_share_one_view(paused_armada):
    ids = _submit(paused_armada, "threads", 200)
    view = _view(paused_armada, status_event_streams=False)
    before = paused_armada.calls.count("GetJobStatus")
    try:

        def on_own_loop(chunk: list[str]) -> list[int]:
            async def ask() -> list[int]:
                return list(await asyncio.gather(*(view.state_of(i, "flyte", "threads") for i in chunk)))

            return asyncio.run(ask())

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            states = [s for chunk in pool.map(on_own_loop, [ids[i::8] for i in range(8)]) for s in chunk]
    finally:
        view.close()
    assert set(states) <= {JobState.QUEUED, JobState.LEASED} and len(states) == 200
    assert paused_armada.calls.count("GetJobStatus") - before <= 8  # shared windows (at worst one a thread), not 200


def test_a_broken_stream_falls_back_to_bulk_polling_and_recovers(paused_armada):
    """Connections to Armada are cut every 0.3 s (a real TCP fault): watches can't last, so the job is
    polled in bulk; once the network heals, the stream resumes and bulk polling stops."""
    (job_id,) = _submit(paused_armada, "breaks", 1)
    proxy = FlakyProxy(paused_armada.url)
    proxy.flaky(0.3)
    view = StatusView(resolve_settings(armada_url=proxy.address, status_refresh_seconds=0.2, grpc_retries=10))
    try:
        assert asyncio.run(view.state_of(job_id, "flyte", "breaks")) in (JobState.QUEUED, JobState.LEASED)
        polls = paused_armada.calls.count("GetJobStatus")
        wait_until(lambda: paused_armada.calls.count("GetJobStatus") >= polls + 2, timeout=20)
        paused_armada.resume()
        wait_until(lambda: asyncio.run(view.state_of(job_id, "flyte", "breaks")) == JobState.SUCCEEDED, timeout=30)

        proxy.heal()
        wait_until(lambda: view.streaming("flyte", "breaks"), timeout=30)
        (second,) = _submit(paused_armada, "breaks", 1)
        asyncio.run(view.wait_for_change(second, JobState.UNKNOWN, 30))  # its first event, unasked
        quiet = paused_armada.calls.count("GetJobStatus")
        wait_until(lambda: asyncio.run(view.state_of(second, "flyte", "breaks")) == JobState.SUCCEEDED, timeout=30)
        assert paused_armada.calls.count("GetJobStatus") == quiet  # the stream alone follows it to the end
    finally:
        view.close()
        proxy.close()


def test_closing_the_view_ends_a_bulk_refresh_that_is_retrying_and_fails_its_askers(caplog):
    """Armada refuses connections and the view retries its GetJobStatus: closing the view ends that refresh (no
    call after the close, the view's thread ends) and the ask waiting on it fails at once, rather than hanging."""
    with socket.socket() as nothing_listens:
        nothing_listens.bind(("127.0.0.1", 0))  # bound, never listening: every connection is refused
        url = f"127.0.0.1:{nothing_listens.getsockname()[1]}"
        view = StatusView(resolve_settings(armada_url=url, grpc_retries=10))
        outcome: concurrent.futures.Future[object] = concurrent.futures.Future()

        def ask() -> None:
            try:
                outcome.set_result(asyncio.run(view.state_of("01-no-such-job", "flyte", "refused")))
            except BaseException as exc:  # noqa: BLE001  (the outcome is what the test reads)
                outcome.set_exception(exc)

        asker = threading.Thread(target=ask, daemon=True)
        asker.start()
        caplog.set_level("WARNING", logger="armada_flyte.connector.armada.api")

        def retrying() -> bool:
            return any("GetJobStatus: UNAVAILABLE" in record.getMessage() for record in caplog.records)

        wait_until(retrying, what="the view's bulk refresh to retry a refused GetJobStatus")
        view.close()
        with pytest.raises(RuntimeError, match="closed"):
            outcome.result(timeout=10)
        assert view.wait_stopped(10), "the closed view's thread still runs (its refresh still retrying)"


def test_a_view_given_a_running_home_loop_runs_on_it_without_a_thread_of_its_own(paused_armada):
    """As in c0 (the connector loaded inside its server's loop): the view follows job sets and answers asks from
    any loop on the home loop itself, with no loop or thread of its own (one grpc.aio loop in the process);
    closing it ends its work there and leaves the home loop running."""
    ids = _submit(paused_armada, "home", 3)
    home = asyncio.new_event_loop()
    runner = threading.Thread(target=home.run_forever, name="home-loop", daemon=True)
    runner.start()
    threads_before = _view_threads()
    view = StatusView(resolve_settings(armada_url=paused_armada.url), home)
    try:

        async def ask() -> set[int]:
            return set(await asyncio.gather(*(view.state_of(i, "flyte", "home") for i in ids)))

        assert asyncio.run(ask()) <= {JobState.QUEUED, JobState.LEASED}  # from another loop, answered on home
        wait_until(lambda: view.streaming("flyte", "home"), what="the job set's stream, on the home loop")
        assert _view_threads() == threads_before, "the view started a thread of its own"
        view.close()
        assert view.wait_stopped(10), "the view on the home loop did not shut down"
        assert home.is_running(), "closing the view stopped its home loop"
        with pytest.raises(RuntimeError, match="closed"):
            asyncio.run(view.state_of(ids[0], "flyte", "home"))
    finally:
        view.close()
        # gRPC hands the completions of the calls the view's channel close cancelled to the loop a little later
        asyncio.run_coroutine_threadsafe(asyncio.sleep(GRPC_DRAIN_SECONDS), home).result(10)
        home.call_soon_threadsafe(home.stop)
        runner.join(10)
        home.close()


def test_a_view_whose_home_loop_is_not_running_runs_on_its_own_loop(paused_armada):
    """A home loop that isn't running when the view starts (the connector imported inside a short-lived loop that
    has ended) is not waited for: the view runs on its own loop, in its own thread."""
    (job_id,) = _submit(paused_armada, "homeless", 1)
    ended = asyncio.new_event_loop()
    ended.close()
    view = StatusView(resolve_settings(armada_url=paused_armada.url), ended)
    try:
        assert asyncio.run(view.state_of(job_id, "flyte", "homeless")) in (JobState.QUEUED, JobState.LEASED)
        assert _view_threads() >= 1
    finally:
        view.close()
    assert view.wait_stopped(10)


def test_a_connector_whose_views_home_loop_ended_gets_a_view_of_its_own(paused_armada):
    """The loop the connector module loaded in may end while the process goes on (a short-lived loop): the next
    call finds it stopped and rebuilds the context, its new view on a loop of its own, rather than leave asks
    waiting on a loop that will never run them."""
    (job_id,) = _submit(paused_armada, "rehomed", 1)
    meta = ArmadaJobMetadata(job_id=job_id, job_set_id="rehomed", queue="flyte", submitted_at=time.time())
    home = asyncio.new_event_loop()
    runner = threading.Thread(target=home.run_forever, name="short-lived-loop", daemon=True)
    runner.start()
    connector = ArmadaConnector(resolve_settings(armada_url=paused_armada.url), view_loop=home)
    try:
        first = run(connector.context())
        run(connector.poll(meta))
        home.call_soon_threadsafe(home.stop)
        runner.join(10)
        second = run(connector.context())
        assert second is not first and second.view is not first.view
        assert run(connector.poll(meta)).phase in (TaskExecution.QUEUED, TaskExecution.INITIALIZING)
        wait_until(lambda: second.view.streaming("flyte", "rehomed"), what="the new view's stream, on its own loop")
    finally:
        run(connector.close())
        home.close()


@pytest.mark.pure
def test_the_connector_module_takes_the_loop_it_is_loaded_in_as_its_views_home():
    """c0 loads its connectors from inside its server's running loop; anywhere else there is none to take."""
    from armada_flyte.connector.service import loading_loop

    assert loading_loop() is None

    async def inside() -> bool:
        return loading_loop() is asyncio.get_running_loop()

    assert asyncio.run(inside())


def test_memory_is_bounded_after_jobs_end(paused_armada):
    ids = _submit(paused_armada, "ends", 100)
    _submit(paused_armada, "ends", 20)  # never asked about: seen on the stream only
    # keep times with room for a loaded machine between two asks (a job dropped early costs a GetJobStatus)
    view = _view(paused_armada, status_idle_seconds=3.0, status_ended_keep_seconds=3.0, status_refresh_seconds=0.2)
    try:
        view.submitted_to("flyte", "ends")  # as create does: its stream starts a refresh period later
        wait_until(lambda: view.size()[0] == 120, timeout=30)
        paused_armada.resume()

        async def ask() -> list[int]:
            return list(await asyncio.gather(*(view.state_of(i, "flyte", "ends") for i in ids)))

        wait_until(lambda: all(s == JobState.SUCCEEDED for s in asyncio.run(ask())), timeout=60)
        # asked again right after their end (as while a0's error file is awaited): still free
        before = paused_armada.calls.count("GetJobStatus")
        assert set(asyncio.run(ask())) == {JobState.SUCCEEDED}
        assert paused_armada.calls.count("GetJobStatus") == before
        # ended jobs leave once not asked about for a while; the never-asked ones and the job set when idle
        wait_until(lambda: view.size() == (0, 0), timeout=30)
    finally:
        view.close()


def _view_threads() -> int:
    return sum(1 for thread in threading.enumerate() if thread.name == "armada-status-view")


def test_each_connector_owns_its_view_and_closing_it_ends_the_views_thread(paused_armada):
    """No process-wide cache of views: connectors with different settings each follow the job set on a
    view of their own; closing a connector, or configuring new settings, ends its view (its thread, and
    with it the view's channels and streams), so nothing piles up."""
    job_id = _submit(paused_armada, "owned", 1)[0]
    meta = ArmadaJobMetadata(job_id=job_id, job_set_id="owned", queue="flyte", submitted_at=time.time())
    before = _view_threads()
    views = []
    for refresh in (0.5, 1.0, 2.0):
        connector = ArmadaConnector(resolve_settings(armada_url=paused_armada.url, status_refresh_seconds=refresh))
        run(connector.poll(meta))
        view = run(connector.context()).view
        wait_until(lambda view=view: view.streaming("flyte", "owned"), what="the view's stream of the job set")
        views.append(view)
        run(connector.close())
        assert view.wait_stopped(10), "the closed connector's view still runs"
    assert len({id(view) for view in views}) == 3

    armada_flyte.configure(armada_url=paused_armada.url, status_refresh_seconds=1.5)
    connector = ArmadaConnector()
    run(connector.poll(meta))
    first = run(connector.context()).view
    armada_flyte.configure(armada_url=paused_armada.url, status_refresh_seconds=3.0)
    run(connector.poll(meta))
    second = run(connector.context()).view
    assert second is not first and first.wait_stopped(10), "new settings left the old view running"
    run(connector.close())
    assert second.wait_stopped(10)
    with pytest.raises(RuntimeError, match="closed"):
        run(second.state_of(job_id, "flyte", "owned"))
    wait_until(lambda: _view_threads() <= before, what=f"the views' threads to end ({_view_threads()} left)")


def test_an_ending_after_a_long_quiet_spell_is_answered_from_memory(paused_armada, monkeypatch):
    """Jobs asked about once, then not for longer than the ended-keep time (a slow resync, a loaded
    machine), then they end: their end stays in memory, so the polls that follow it cost no call."""
    from armada_flyte.connector.poll import status_view

    ids = _submit(paused_armada, "quiet", 50)
    later = {"seconds": 0.0}
    monkeypatch.setattr(status_view, "time", SimpleNamespace(monotonic=lambda: time.monotonic() + later["seconds"]))
    view = _view(paused_armada, status_ended_keep_seconds=30.0, status_refresh_seconds=0.1)

    async def ask() -> list[int]:
        return list(await asyncio.gather(*(view.state_of(i, "flyte", "quiet") for i in ids)))

    try:
        assert set(asyncio.run(ask())) <= {JobState.QUEUED, JobState.LEASED}
        later["seconds"] = 60.0  # the quiet spell: a minute with no ask
        paused_armada.resume()

        def ended_in_memory() -> bool:
            facts = [view.run_facts(i) for i in ids]
            return all(f is not None and f.ended for f in facts)

        wait_until(ended_in_memory, timeout=60, what="the view to hold every job's end")
        before = paused_armada.calls.count("GetJobStatus")
        assert set(asyncio.run(ask())) == {JobState.SUCCEEDED}
        assert paused_armada.calls.count("GetJobStatus") == before
    finally:
        view.close()


@pytest.mark.pure
def test_an_ending_found_in_bulk_keeps_the_node_the_stream_said():
    """Armada's details may lack a run's node (on Kubernetes, for a run that never reported running before the
    lookout saw it end): the node and start the stream gave stay, so an `any` job's architecture is known."""
    from armada_flyte.connector.poll.job_set_streams import RunFacts
    from armada_flyte.connector.poll.status_view import _merged

    streamed = RunFacts(node="arm64-0", cluster="c1", started_at=5.0)
    details = RunFacts(ended=True, finished_at=9.0)
    merged = _merged(details, streamed)
    assert (merged.node, merged.cluster, merged.started_at, merged.ended, merged.finished_at) == (
        "arm64-0",
        "c1",
        5.0,
        True,
        9.0,
    )
    assert _merged(RunFacts(node="amd64-1", ended=True), streamed).node == "amd64-1"  # the details' own, when given


@pytest.mark.pure
def test_only_a_live_stream_that_went_quiet_is_checked_in_bulk():
    """A stream that brought a message within `status_live_check_seconds` is not frozen: its jobs are not asked
    for in bulk (an answer ahead of its events would end a job with fewer facts than the events give)."""
    from armada_flyte.connector.poll.job_set_streams import StreamMode
    from armada_flyte.connector.poll.status_view import _Follow

    view = StatusView(resolve_settings(status_live_check_seconds=60))
    talking = _Follow(("q", "talking"), 0.0, StreamMode.LIVE, checked=1000.0, heard=1050.0)
    quiet = _Follow(("q", "quiet"), 0.0, StreamMode.LIVE, checked=1000.0, heard=1001.0)
    view._follows = {follow.key: follow for follow in (talking, quiet)}
    assert view._live_checks_due(1070.0) == {("q", "quiet")}
    assert view._live_checks_due(1080.0) == set()  # checked at 1070: not again within the period
    assert view._live_checks_due(1111.0) == {("q", "talking")}  # quiet since 1050
