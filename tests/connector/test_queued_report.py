"""Why a task is still queued (Armada's SchedulerReporting API) and how to fix a rejection, as the
connector tells Flyte: in-process (what local runs poll) and through a real `c0` over gRPC."""

from __future__ import annotations

import contextlib
import json
import uuid

import grpc
import pytest
from armada_client.client import ArmadaClient
from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

import armada_flyte
from armada_flyte import ArmadaConfig
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.poll.queued_report import excluded_nodes, explain_rejection, gist
from armada_flyte.protos import scheduler_reporting_pb2 as reporting_pb2
from armada_flyte.protos import scheduler_reporting_pb2_grpc as reporting_pb2_grpc

from support.armada_templates import execution_metadata, python_template, run, wait_for
from support.blockers import fill_group
from support.c0_service import ARMADA_TASKS
from support.waiting import wait_until

SLEEPER = "import time; time.sleep(600)"
BUSY_AMD64 = "2 nodes of group amd64 are busy: the task needs 4 cpu, 0 is free"


@pytest.fixture
def client(armada):
    channel = grpc.insecure_channel(armada.url)
    yield ArmadaClient(channel)
    channel.close()


@pytest.fixture
def amd64_full(client):
    yield from fill_group(client, "other", "amd64")


def test_the_embedded_server_answers_getjobreport_like_armada(armada, client, amd64_full):
    """The report shape of internal/scheduler/reports/server.go and scheduling/context/{job,pod}.go."""
    armada_flyte.configure(armada_url=armada.url, node_groups_preset="embedded")
    stub = reporting_pb2_grpc.SchedulerReportingStub(grpc.insecure_channel(armada.url))
    with contextlib.closing(_submit_waiting_amd64_job(armada)) as waiting:
        report = stub.GetJobReport(reporting_pb2.JobReportRequest(job_id=waiting.job_id), timeout=10).report
    assert report.startswith("default:\n\tMost recent scheduling round that affected job ")
    assert "UnschedulableReason: job does not fit on any node" in report
    assert "\t2:\tpod requires 4 cpu, but only 0 is available (node group amd64)" in report
    with pytest.raises(grpc.RpcError) as info:  # Armada parses the id as a ULID first
        stub.GetJobReport(reporting_pb2.JobReportRequest(job_id="not-a-job"), timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


class _Waiting:
    """A 4-cpu amd64 task submitted through the connector, cancelled on close."""

    def __init__(self, connector, meta):
        self.connector, self.meta, self.job_id = connector, meta, meta.job_id

    def close(self) -> None:
        run(self.connector.delete(self.meta))


def _submit_waiting_amd64_job(armada, **settings) -> _Waiting:
    from armada_flyte.connector.service import ArmadaConnector

    armada_flyte.configure(armada_url=armada.url, node_groups_preset="embedded", **settings)
    connector = ArmadaConnector()
    template = python_template(SLEEPER, ArmadaConfig(architecture="amd64"), cpu="4", memory="1Gi")
    prefix = f"s3://flyte/raw/queued-{uuid.uuid4().hex[:8]}/a0/0"  # its own client_id: Armada dedupes on it
    return _Waiting(connector, run(connector.submit(template, prefix)))


def test_a_queued_task_says_which_node_groups_have_no_room_and_its_queues_standing(armada, amd64_full):
    with contextlib.closing(
        _submit_waiting_amd64_job(armada, queued_report_after_seconds=0, queued_report_refresh_seconds=600)
    ) as waiting:
        outcome = wait_until(lambda: _queued_poll(waiting), timeout=10, what=_READS_QUEUED)
        again = run(waiting.connector.poll(waiting.meta))
    assert outcome.phase == TaskExecution.QUEUED
    assert f"why: {BUSY_AMD64}" in outcome.message
    assert "2 nodes of other node groups don't suit it, as expected" in outcome.message
    assert "queue flyte" in outcome.message
    report = outcome.info["queued_report"]
    assert report["unschedulable_reason"] == "job does not fit on any node"
    assert {"nodes": 2, "reason": "pod requires 4 cpu, but only 0 is available", "node_groups": ["amd64"]}.items() <= (
        report["excluded_nodes"][0].items()
    )
    assert again.info["queued_report"]["fetched_at"] == report["fetched_at"]  # within the refresh interval


_READS_QUEUED = "a poll of the waiting task to read QUEUED"


def _queued_poll(waiting: _Waiting):
    """A poll once the job reads QUEUED (the connector's status view may not know it at first), else None."""
    outcome = run(waiting.connector.poll(waiting.meta))
    return outcome if outcome.info.get("armada_state") == "QUEUED" else None


def test_no_report_is_asked_for_before_the_job_has_waited_long_enough(armada, amd64_full):
    with contextlib.closing(_submit_waiting_amd64_job(armada, queued_report_after_seconds=600)) as waiting:
        outcome = wait_until(lambda: _queued_poll(waiting), timeout=10, what=_READS_QUEUED)
    assert outcome.phase == TaskExecution.QUEUED
    assert "why:" not in outcome.message and "queued_report" not in outcome.info


def test_the_report_is_asked_for_again_after_the_refresh_interval(armada, client, amd64_full):
    with contextlib.closing(
        _submit_waiting_amd64_job(armada, queued_report_after_seconds=0, queued_report_refresh_seconds=0.2)
    ) as waiting:

        def fetched_at() -> float:
            return run(waiting.connector.poll(waiting.meta)).info.get("queued_report", {}).get("fetched_at", 0.0)

        # the first polls may see the job before it is QUEUED
        first = wait_until(fetched_at, timeout=10, what="a first queued report")

        def fetched_again() -> float:
            later = fetched_at()
            return later if later > first else 0.0

        later = wait_until(fetched_again, timeout=10, what=f"a queued report fetched after the first (at {first})")
    assert later > first > 0.0


def test_c0_gettask_carries_the_queued_report_to_the_backend(armada, blob, tmp_path, amd64_full):
    from support.c0_service import running_c0

    env = {
        "ARMADA_URL": armada.url,
        "ARMADA_FLYTE_NODE_GROUPS_PRESET": "embedded",
        "ARMADA_FLYTE_QUEUED_REPORT_AFTER_SECONDS": "0",
    }
    with running_c0(env, tmp_path / "c0.log") as c0:
        template = python_template(SLEEPER, ArmadaConfig(architecture="amd64"), cpu="4", memory="1Gi")
        request = connector_pb2.CreateTaskRequest(
            template=template,
            output_prefix=f"s3://flyte/raw/c0queued-{uuid.uuid4().hex[:8]}/a0/0",
            task_execution_metadata=execution_metadata(run="c0queued"),
        )
        meta = c0.CreateTask(request, timeout=30).resource_meta
        get = connector_pb2.GetTaskRequest(resource_meta=meta, task_category=ARMADA_TASKS)
        seen: list = []

        def reported():
            # the first GetTasks may see the job SUBMITTED, before Armada queues it and a report is asked for
            seen.append(c0.GetTask(get, timeout=30).resource)
            return seen[-1] if "why:" in seen[-1].message or seen[-1].phase != TaskExecution.QUEUED else None

        try:
            resource = wait_until(reported, timeout=30, what="a GetTask carrying the queued report")
        except AssertionError as exc:
            log = (tmp_path / "c0.log").read_text(errors="replace")[-4000:]
            raise AssertionError(f"{exc}; last answer: {seen[-1].message!r}\nc0 log:\n{log}") from None
        finally:
            c0.DeleteTask(connector_pb2.DeleteTaskRequest(resource_meta=meta, task_category=ARMADA_TASKS), timeout=30)
    assert resource.phase == TaskExecution.QUEUED, resource.message
    assert f"why: {BUSY_AMD64}" in resource.message
    assert resource.custom_info["queued_report"]["excluded_nodes"][0]["node_groups"] == ["amd64"]


def test_a_rejection_for_an_untolerated_taint_says_which_node_group_to_fix_and_where(armada, tmp_path):
    from armada_flyte.connector.service import ArmadaConnector

    groups = tmp_path / "groups.yaml"  # the arm64 nodes are tainted, but this file doesn't say so
    groups.write_text("architectures:\n  amd64: {}\n  arm64: {}\n")
    armada_flyte.configure(armada_url=armada.url, node_groups_file=str(groups), ack_timeout_seconds=30)
    connector = ArmadaConnector()
    meta = run(connector.submit(python_template("pass", ArmadaConfig(architecture="arm64")), "s3://flyte/raw/r/a0/0"))
    resource = run(wait_for(connector, meta, {TaskExecution.FAILED}))
    fix = (
        "the arm64 group's taint kubernetes.io/arch=arm64:NoSchedule is not tolerated: add the toleration "
        "{key: kubernetes.io/arch, operator: Equal, value: arm64, effect: NoSchedule} "
        f"to node group arm64 in {groups}"
    )
    assert f"To fix: {fix}" in resource.message
    assert resource.custom_info["fix"] == fix
    assert "amd64" not in resource.custom_info["fix"]  # the amd64 nodes' mismatch is expected, not a fix


# A real Armada's report: aligned by Go's tabwriter with spaces, no node-group names
# (internal/scheduler/reports/server.go, scheduling/context/job.go and pod.go).
ARMADA_JOB_REPORT = """cpu:
    Most recent scheduling round that affected job 01hxyz:
        Time:                 2025-01-01 10:00:00 +0000 UTC
        Job ID:               01hxyz
        UnschedulableReason:  job does not fit on any node
        Node:                 none
        Number of nodes in cluster: 5
        Excluded nodes:
            3: taint example.com/pool=arm:NoSchedule not tolerated
            2: node does not match pod NodeSelector: required label kubernetes.io/arch = arm64, but node has amd64
"""


@pytest.mark.pure
def test_a_real_armada_report_is_read_whatever_its_spacing_and_taints_are_matched_to_declared_groups():
    groups = NodeGroups.from_mapping(
        {
            "architectures": {
                "amd64": {},
                "arm64": {
                    "node_group": "graviton",
                    "taints": [{"key": "example.com/pool", "value": "arm", "effect": "NoSchedule"}],
                },
            }
        },
        origin="groups.yaml",
    )
    assert [(x.count, x.node_groups) for x in excluded_nodes(ARMADA_JOB_REPORT)] == [(3, ()), (2, ())]
    report = gist(ARMADA_JOB_REPORT, "", "q", "graviton", groups)
    assert report.message.startswith(
        "the graviton group's taint example.com/pool=arm:NoSchedule is not tolerated: add the toleration "
        "{key: example.com/pool, operator: Equal, value: arm, effect: NoSchedule} to node group graviton in groups.yaml"
    )
    # the 2 amd64 nodes (found by the file's amd64 selector) are another architecture's: expected
    assert "(2 nodes of other node groups don't suit it, as expected)" in report.message
    assert explain_rejection(ARMADA_JOB_REPORT, groups, "graviton").startswith("the graviton group's taint")


def test_metadata_round_trips_without_the_report(armada, amd64_full):
    """The report lives in the process, never in the metadata Flyte persists."""
    with contextlib.closing(_submit_waiting_amd64_job(armada, queued_report_after_seconds=0)) as waiting:
        run(waiting.connector.poll(waiting.meta))
        assert "report" not in json.loads(waiting.meta.encode())


# Real Armada counts nodes its resource index skipped as "insufficient resources available"
# (v0.22.7 internal/scheduler/nodedb/nodematching.go and nodedb.go), naming no resource.
ARMADA_BUSY_REPORT = """default:
    Most recent scheduling round that affected job 01hbusy:
        UnschedulableReason:  job does not fit on any node
        Node:                 none
        Number of nodes in cluster: 3
        Excluded nodes:
            3: insufficient resources available
"""
ARMADA_QUEUE_REPORT = """default:
    Total allocated resources after scheduling: {cpu: 12}
    Number of jobs that could not be scheduled: 4
"""


def test_real_armadas_insufficient_resources_reads_as_busy_nodes_while_queued():
    groups = NodeGroups.from_mapping({"architectures": {"amd64": {}}}, origin="groups.yaml")
    report = gist(ARMADA_BUSY_REPORT, ARMADA_QUEUE_REPORT, "q", "amd64", groups)
    assert report.message == (
        "3 nodes are busy: not enough of the task's resources is free; queue q holds {cpu: 12}, 4 of its jobs "
        "wait for room (Armada shares the cluster between queues by fair share)"
    )


def test_real_armadas_rejections_for_size_say_to_lower_the_tasks_resources():
    groups = NodeGroups.from_mapping({"architectures": {"amd64": {}}}, origin="groups.yaml")
    too_big = "pool default:\nNode: none\nExcluded nodes:\n\t3:\tinsufficient resources available\n---"
    assert explain_rejection(too_big, groups, "amd64") == (
        "the task asks for more resources than the nodes have: lower the task's resources, or ask for bigger nodes"
    )
    # internal/scheduler/submitcheck.go: a job bigger than its queue's limit
    over_limit = (
        "pool default:\njob/gang requests resources {cpu: 64, memory: 1Gi} which exceeds the total limit of "
        "{cpu: 16} for its queue/priority class\n\n---"
    )
    assert explain_rejection(over_limit, groups, "amd64") == (
        "the task asks for {cpu: 64, memory: 1Gi}, more than its queue's limit of {cpu: 16} for its priority "
        "class: lower the task's resources, or ask the Armada admin to raise the queue's limit"
    )


def _embedded_job_report(*lines: str, nodes: int = 2) -> str:
    """The embedded server's GetJobReport text (scheduling/reports.py) with these excluded-node lines."""
    excluded = "".join(f"\t\t\t{line}\n" for line in lines)
    return (
        "default:\n\tMost recent scheduling round that affected job 01hq:\n\t\tJob ID: 01hq\n"
        "\t\tUnschedulableReason: job does not fit on any node\n\t\tNode: none\n"
        f"\t\tNumber of nodes in cluster: {nodes}\n\t\tExcluded nodes:\n{excluded}"
    )


def _armada_job_report(*lines: str, nodes: int = 2, pools: str = "") -> str:
    """Real Armada's GetJobReport text (v0.22.7 reports/server.go, context/job.go and pod.go), tabwriter-aligned,
    naming no node group."""
    excluded = "".join(f"            {line}\n" for line in lines)
    return (
        "default:\n    Most recent scheduling round that affected job 01hq:\n        Job ID:               01hq\n"
        "        UnschedulableReason:  job does not fit on any node\n        Node:                 none\n"
        f"        Number of nodes in cluster: {nodes}\n        Excluded nodes:\n{excluded}{pools}"
    )


ARM_ONLY_SELECTED = (
    "node does not match pod NodeSelector: required label kubernetes.io/arch = arm64, but node has amd64"
)


@pytest.mark.pure
@pytest.mark.parametrize(
    "report, no_node",
    [
        (_embedded_job_report(f"2:\t{ARM_ONLY_SELECTED} (node group amd64)"), True),
        (_armada_job_report(f"2: {ARM_ONLY_SELECTED}"), True),
        # busy, or too small: both servers word these alike, so neither says the group is gone
        (_embedded_job_report("2:\tpod requires 2 cpu, but only 1 is available (node group arm64)", nodes=2), False),
        (_armada_job_report("2: insufficient resources available", f"2: {ARM_ONLY_SELECTED}", nodes=4), False),
        # cordoned: real Armada taints an unschedulable node (internaltypes/unschedulable.go), no group's taint
        (
            _armada_job_report(
                "2: taint armadaproject.io/unschedulable=true:NoSchedule not tolerated",
                f"2: {ARM_ONLY_SELECTED}",
                nodes=4,
            ),
            False,
        ),
        # a node of no known group (its arch label unset)
        (_armada_job_report("1: node does not match pod NodeSelector: label kubernetes.io/arch not set"), False),
        # not every node of the pool is accounted for: one may hold it
        (_armada_job_report(f"2: {ARM_ONLY_SELECTED}", nodes=3), False),
        # a pool whose latest round did not consider the job may have the group's nodes
        (
            _armada_job_report(
                f"2: {ARM_ONLY_SELECTED}", pools="gpu:\n    Most recent scheduling round that affected job 01hq: none\n"
            ),
            False,
        ),
        ("", False),
    ],
    ids=[
        "embedded: every node another group's",
        "real Armada: every node another group's",
        "embedded: busy or too small",
        "real Armada: busy or too small",
        "real Armada: cordoned",
        "a node of no known group",
        "a node unaccounted for",
        "a pool that did not consider it",
        "no report",
    ],
)
def test_a_report_says_the_group_has_no_node_left_only_when_every_node_is_another_groups(report, no_node):
    queued = gist(report, "", "flyte", "arm64", NodeGroups.preset("embedded"))
    assert queued.no_node_of_group is no_node, queued.message
    assert queued.info["no_node_of_group"] is no_node
    if no_node:
        assert queued.message == "no node of group arm64 is left: the scheduler's 2 nodes are of group amd64"
    else:
        assert not queued.message.startswith("no node of group")
