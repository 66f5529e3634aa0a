"""End to end: real Flyte local runs, real gRPC to Armada (embedded, or real with `--armada real`),
real S3, real a0."""

from __future__ import annotations

import asyncio
import contextlib
import pathlib
import time

import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient

import armada_flyte
from armada_flyte.local import journal
from armada_flyte.pod_runner.process_tree import is_alive

from support.armada_channels import armada_channel
from support.waiting import wait_until

pytestmark = pytest.mark.e2e


def test_typed_result_comes_back_from_an_arm64_job(flyte_run):
    import workflows

    run = flyte_run(workflows.summarise, values=[1.5, 2.5, 4.0])
    stats = run.outputs()[0] if isinstance(run.outputs(), tuple) else run.outputs()
    assert (stats.count, stats.total) == (3, 8.0)
    (job,) = journal.jobs()
    assert (job.architecture, job.source, job.node_group, job.outcome) == ("arm64", "task", "arm64", "SUCCEEDED")
    assert job.node.startswith("arm64")


def test_fan_out_of_five(flyte_run):
    import workflows

    run = flyte_run(workflows.fan_out, n=5)
    result = run.outputs()[0] if isinstance(run.outputs(), tuple) else run.outputs()
    assert list(result) == [0, 1, 4, 9, 16]
    jobs = journal.jobs()
    assert len(jobs) == 5 and {j.outcome for j in jobs} == {"SUCCEEDED"}
    assert {j.node_group for j in jobs} == {"amd64"}


def test_a_fan_out_leaves_no_folder_named_after_the_blob_store_in_the_working_directory(
    flyte_run, tmp_path, monkeypatch
):
    import workflows

    monkeypatch.chdir(tmp_path)
    flyte_run(workflows.fan_out, n=3)
    assert not (tmp_path / "s3:").exists()
    assert list(tmp_path.iterdir()) == []


def test_a_gang_of_three_runs_together_on_one_architecture(flyte_run, stack):
    import workflows

    run = flyte_run(workflows.gang_of_three)
    assert list(run.outputs()[0] if isinstance(run.outputs(), tuple) else run.outputs()) == [0, 1, 2]
    jobs = journal.jobs()
    assert len(jobs) == 3 and {(j.outcome, j.node_group) for j in jobs} == {("SUCCEEDED", "arm64")}
    gangs = {gang_annotations(stack.armada_url, j.job_id) for j in jobs}
    ((gang_id, cardinality, uniformity_label),) = gangs  # one gang, scheduled by Armada as a whole
    assert gang_id.startswith("trio-") and cardinality == "3"
    assert uniformity_label == "kubernetes.io/arch"


def test_a_gang_that_sizes_itself_runs_four_members_as_one_gang_on_one_architecture(flyte_run, stack):
    """No gang_id or gang_cardinality written: the Gang derives both from the four calls added to it."""
    import workflows

    run = flyte_run(workflows.crew_gang, n=4)
    assert list(run.outputs()[0] if isinstance(run.outputs(), tuple) else run.outputs()) == [0, 1, 2, 3]
    jobs = journal.jobs()
    assert len(jobs) == 4 and {j.outcome for j in jobs} == {"SUCCEEDED"}
    assert len({j.node_group for j in jobs}) == 1  # members of `any`, placed as one
    gangs = {gang_annotations(stack.armada_url, j.job_id) for j in jobs}
    ((gang_id, cardinality, uniformity_label),) = gangs  # one gang, scheduled by Armada as a whole
    assert gang_id.startswith("crew-") and cardinality == "4"
    assert uniformity_label == "kubernetes.io/arch"


def test_a_gangs_architecture_places_every_member(flyte_run, stack):
    import workflows

    run = flyte_run(workflows.crew_gang, n=3, architecture="arm64")
    assert list(run.outputs()[0] if isinstance(run.outputs(), tuple) else run.outputs()) == [0, 1, 2]
    jobs = journal.jobs()
    assert {(j.architecture, j.node_group, j.outcome) for j in jobs} == {("arm64", "arm64", "SUCCEEDED")}
    assert len(jobs) == 3
    ((gang_id, cardinality, _),) = {gang_annotations(stack.armada_url, j.job_id) for j in jobs}
    assert gang_id.startswith("crew-") and cardinality == "3"


def test_a_gang_preferring_a_full_architecture_moves_to_the_next_as_a_whole(flyte_run, stack):
    import workflows

    from support.blockers import fill_group

    channel = armada_channel(stack.armada_url)
    try:
        with contextlib.contextmanager(fill_group)(ArmadaClient(channel), stack.queue, "arm64"):
            run = flyte_run(workflows.crew_gang, n=2, architecture="arm64,amd64", spill_after=1.0)
    finally:
        channel.close()
    assert list(run.outputs()[0] if isinstance(run.outputs(), tuple) else run.outputs()) == [0, 1]
    jobs = journal.jobs()
    assert {(j.architecture, j.node_group, j.outcome) for j in jobs} == {
        ("amd64 (spilled from arm64)", "amd64", "SUCCEEDED")
    }
    ((gang_id, cardinality, _),) = {gang_annotations(stack.armada_url, j.job_id) for j in jobs}
    assert gang_id.startswith("crew-") and gang_id.endswith("-amd64") and cardinality == "2"


def test_a_gang_declaring_five_with_four_members_fails_at_once_with_both_numbers(flyte_run):
    import workflows
    from flyte.errors import RuntimeUserError

    started = time.monotonic()
    with pytest.raises(RuntimeUserError) as info:
        flyte_run(workflows.crew_gang, n=4, declared=5)
    assert info.value.code == "GangCardinalityMismatch"
    assert "declares 5 members, but 4 were added" in str(info.value)
    assert journal.jobs() == []  # nothing submitted, nothing left waiting
    assert time.monotonic() - started < 30


def test_a_gang_member_that_fails_cancels_the_others_and_its_error_reaches_the_parent(flyte_run, pods_tmp_path):
    import workflows
    from flyte.errors import RuntimeUserError

    started = time.monotonic()
    with pytest.raises(RuntimeUserError) as info:
        flyte_run(workflows.gang_with_a_failing_member, pid_dir=str(pods_tmp_path))
    assert info.value.code == "ValueError" and "one member fails" in str(info.value)
    assert time.monotonic() - started < 120  # the others would linger for 600 s
    outcomes = sorted(j.outcome for j in journal.jobs())
    assert outcomes == ["CANCELLED", "CANCELLED", "CANCELLED", "FAILED ValueError"]
    for pid_file in pods_tmp_path.iterdir():
        pid = int(pid_file.read_text() or 0)
        wait_until(lambda pid=pid: not pid or not is_alive(pid), 30, f"member process {pid} to end")


def test_a_gang_member_runs_once_whatever_its_retries(flyte_run, caplog):
    """A retried member would wait for partners that already ran: the gang fails with the member's error."""
    import workflows
    from flyte.errors import RuntimeUserError

    with pytest.raises(RuntimeUserError) as info:
        flyte_run(workflows.gang_with_a_retried_member)
    assert info.value.code == "ConnectionError"
    assert sorted(j.task for j in journal.jobs()) == ["double", "flaky"]  # no second attempt of flaky
    assert "gang once: ignoring retries= of e2e-default.flaky: a gang's members run once" in caplog.text


def test_retries_on_the_task_holding_a_gang_run_it_again_as_a_new_gang(flyte_run, stack, tmp_path):
    import workflows

    run = flyte_run(workflows.gang_retried_whole, marker=str(tmp_path / "first-attempt-ran"))
    assert list(run.outputs()[0] if isinstance(run.outputs(), tuple) else run.outputs()) == [1, 2]
    jobs = journal.jobs()
    succeeded = [j for j in jobs if j.outcome == "SUCCEEDED" and j.task == "fails_if"]
    failed = [j for j in jobs if j.outcome == "FAILED ValueError"]
    assert len(succeeded) == 1 and len(failed) == 1
    first, second = (gang_annotations(stack.armada_url, j.job_id)[0] for j in (*failed, *succeeded))
    assert first.startswith("again-") and second.startswith("again-") and first != second


def gang_annotations(armada_url: str, job_id: str) -> tuple[str, str, str]:
    """The gang id, cardinality and node uniformity label Armada holds for the job (GetJobDetails)."""
    from armada_client.armada import job_pb2, job_pb2_grpc

    with armada_channel(armada_url) as channel:
        details = job_pb2_grpc.JobsStub(channel).GetJobDetails(
            job_pb2.JobDetailsRequest(job_ids=[job_id], expand_job_spec=True), timeout=30
        )
    annotations = details.job_details[job_id].job_spec.annotations
    keys = ("gangId", "gangCardinality", "gangNodeUniformityLabel")
    return tuple(annotations.get(f"armadaproject.io/{key}", "") for key in keys)


def test_task_without_architecture_takes_the_platform_default(flyte_run):
    import workflows

    run = flyte_run(workflows.double, x=21)
    assert (run.outputs()[0] if isinstance(run.outputs(), tuple) else run.outputs()) == 42
    (job,) = journal.jobs()
    assert (job.architecture, job.source, job.node_group) == ("amd64", "platform", "amd64")


def test_an_any_task_reports_the_architecture_it_ran_on(flyte_run):
    import workflows

    run = flyte_run(workflows.triple, x=5)
    assert (run.outputs()[0] if isinstance(run.outputs(), tuple) else run.outputs()) == 15
    (job,) = journal.jobs()
    ran = job.node.split("-")[0]  # the embedded server names nodes <group>-<n>
    assert ran in ("amd64", "arm64")
    assert (job.architecture, job.source, job.node_group, job.outcome) == (f"{ran} (any)", "task", ran, "SUCCEEDED")
    assert f"{ran} (any)" in journal.format_jobs_table()


def test_user_exception_reaches_the_caller_with_type_and_message(flyte_run):
    import workflows
    from flyte.errors import RuntimeUserError

    with pytest.raises(RuntimeUserError) as info:
        flyte_run(workflows.explode, reason="negative count")
    assert info.value.code == "ValueError"
    assert "bad input: negative count" in str(info.value)
    (job,) = journal.jobs()
    # a0 exits 0, so Armada says SUCCEEDED: the table says what happened to the task, and Armada's state beside it
    assert (job.outcome, job.armada_state) == ("FAILED ValueError", "SUCCEEDED")
    assert "FAILED ValueError (Armada: SUCCEEDED)" in journal.format_jobs_table()


def test_architecture_not_offered_fails_before_any_job(flyte_run, tmp_path):
    import workflows

    groups = tmp_path / "amd64-only.yaml"
    groups.write_text("default_architecture: amd64\narchitectures:\n  amd64: {}\n")
    armada_flyte.configure(node_groups_preset=None, node_groups_file=str(groups))
    with pytest.raises(Exception) as info:
        flyte_run(workflows.summarise, values=[1.0])
    assert "not offered" in str(info.value) and "offered: amd64" in str(info.value)
    assert journal.jobs() == []


def test_missing_toleration_is_rejected_with_the_taint_reason(flyte_run, tmp_path):
    import workflows

    groups = tmp_path / "no-toleration.yaml"
    groups.write_text("architectures:\n  amd64: {}\n  arm64: {}\n")
    armada_flyte.configure(node_groups_preset=None, node_groups_file=str(groups))
    with pytest.raises(Exception) as info:
        flyte_run(workflows.summarise, values=[1.0])
    assert "taint kubernetes.io/arch=arm64:NoSchedule not tolerated" in str(info.value)
    assert (
        "To fix: the arm64 group's taint kubernetes.io/arch=arm64:NoSchedule is not tolerated: add the toleration "
        "{key: kubernetes.io/arch, operator: Equal, value: arm64, effect: NoSchedule} "
        f"to node group arm64 in {groups}"
    ) in str(info.value)
    (job,) = journal.jobs()
    assert (job.outcome, job.armada_state) == ("FAILED", "REJECTED")


def test_a_task_that_cannot_start_says_why_armada_kept_it_queued(flyte_run, stack):
    import workflows

    from support.blockers import fill_group

    armada_flyte.configure(queued_report_after_seconds=1)
    channel = armada_channel(stack.armada_url)
    try:
        with contextlib.contextmanager(fill_group)(ArmadaClient(channel), stack.queue, "amd64"):
            with pytest.raises(Exception) as info:
                flyte_run(workflows.square_soon, x=3)
    finally:
        channel.close()
    message = str(info.value)
    assert "timeout of 4s waiting to start" in message
    if stack.server is not None:  # the embedded scheduler's report names the resource
        assert "why: 2 nodes of group amd64 are busy: the task needs 250m cpu, 0 is free" in message
    else:  # real Armada's reads "insufficient resources available"
        assert "why: 2 nodes are busy: not enough of the task's resources is free" in message


def test_cancelled_run_leaves_no_job_and_no_process(flyte_run, stack, pods_tmp_path):
    import flyte
    import workflows

    from armada_flyte.connector.armada.api import ArmadaApi
    from armada_flyte.connector.config.settings import resolve_settings

    pid_file = pods_tmp_path / "pid"  # the task writes it

    async def interrupted_run():
        runner = flyte.with_runcontext(mode="local", raw_data_path=stack.raw_data_path)
        task = asyncio.ensure_future(runner.run.aio(workflows.linger, pid_file=str(pid_file)))
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text()):
            assert time.monotonic() < deadline, "the job never started"
            assert not task.done(), task.exception() if task.done() else None
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(interrupted_run())
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 30
    while is_alive(pid):
        assert time.monotonic() < deadline, f"process {pid} of the cancelled run is still alive"
        time.sleep(0.05)
    (job,) = journal.jobs()
    assert (job.outcome, job.armada_state) == ("CANCELLED", "CANCELLED")  # Armada's state after the cancel
    # Real Armada's GetJobStatus reads Lookout's database, which the lookout ingester fills from the cancel's
    # events a moment later (internal/lookoutingester): wait for it, bounded.
    cancelled = {job.job_id: submit_pb2.CANCELLED}
    wait_until(
        lambda: asyncio.run(ArmadaApi(resolve_settings()).status([job.job_id])) == cancelled,
        30,
        f"GetJobStatus to say job {job.job_id} is CANCELLED",
    )


def test_local_raw_data_path_runs_the_function_in_process(stack, tmp_path, caplog):
    """A file raw data path can't be read by pods: the task runs in-process, and says so."""
    import sys

    import flyte

    project = pathlib.Path(__file__).parent / "project"
    sys.path.insert(0, str(project))
    try:
        import workflows

        flyte.init(root_dir=project)
        journal.clear()
        run = flyte.with_runcontext(mode="local", raw_data_path=str(tmp_path / "raw")).run(workflows.square, x=7)
    finally:
        sys.path.remove(str(project))
    assert (run.outputs()[0] if isinstance(run.outputs(), tuple) else run.outputs()) == 49
    assert journal.jobs() == []  # no Armada job
    assert any("runs in-process" in r.getMessage() for r in caplog.records)


def test_local_jobs_carry_the_runs_own_identity_not_flytes_test_values(flyte_run, stack):
    import workflows
    from armada_client.armada import job_pb2, job_pb2_grpc

    flyte_run(workflows.double, x=2)
    (job,) = journal.jobs()
    with armada_channel(stack.armada_url) as channel:
        details = job_pb2_grpc.JobsStub(channel).GetJobDetails(
            job_pb2.JobDetailsRequest(job_ids=[job.job_id], expand_job_spec=True), timeout=30
        )
    args = list(details.job_details[job.job_id].job_spec.pod_spec.containers[0].args)
    assert not {"test-org", "test-project", "test-domain"} & set(args), args
    values = {flag: args[args.index(flag) + 1] for flag in ("--org", "--project", "--domain")}
    assert values == {"--org": "default", "--project": "default", "--domain": "development"}


def test_an_armada_task_calling_another_task_fails_at_once_saying_tasks_are_leaves(flyte_run):
    import workflows
    from flyte.errors import RuntimeUserError

    started = time.monotonic()
    with pytest.raises(RuntimeUserError) as info:
        flyte_run(workflows.nests, x=2)
    assert info.value.code == "ArmadaTaskIsALeaf"
    assert "Armada tasks are leaves" in str(info.value) and "double" in str(info.value)
    assert time.monotonic() - started < 60, "it must fail at once, not wait for a backend"
    (job,) = journal.jobs()
    assert (job.outcome, job.armada_state) == ("FAILED ArmadaTaskIsALeaf", "SUCCEEDED")  # a0 exits 0
