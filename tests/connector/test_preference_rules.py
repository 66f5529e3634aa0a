"""An ordered architecture preference, without a server: how it is written and validated, how the
platform, the image and the pod template narrow it, the jobs create plans for each step, and the pure
answers the spill-over is made of."""

from __future__ import annotations

from dataclasses import replace

import pytest

from armada_flyte import Architecture, ArmadaConfig, InvalidConfig, NoCommonArchitecture
from armada_flyte.armada_names import JobState
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.model.identity import RunIdentity
from armada_flyte.connector.model.job_request import LABEL_ARCH
from armada_flyte.connector.model.metadata import ArmadaJobMetadata, encoded_steps
from armada_flyte.connector.model.run_details import RunDetails
from armada_flyte.connector.poll import moves, spill
from armada_flyte.connector.poll.queued_report import gist
from armada_flyte.connector.submit.execution_context import ExecutionContext
from armada_flyte.connector.submit.placement import ImageArchitectures, resolve_architecture
from armada_flyte.connector.submit.plan import SubmitSettings, plan_job
from armada_flyte.spec import SubmissionSpec
from armada_flyte.task.project_defaults import env_defaults

from support.armada_templates import python_template

pytestmark = pytest.mark.pure

ARM, AMD = Architecture.arm64, Architecture.amd64
PREFER_ARM = (ARM, AMD)


# ---- how it is written ----
@pytest.mark.parametrize("written", [["arm64", "amd64"], ("aarch64", "x86_64"), "arm64,amd64", " arm64 , amd64 "])
def test_a_preference_is_an_ordered_list_or_a_comma_separated_string(written):
    assert ArmadaConfig(architecture=written).architecture == PREFER_ARM


def test_a_list_of_one_is_that_architecture():
    assert ArmadaConfig(architecture=["amd64"]).architecture == AMD


@pytest.mark.parametrize("written, says", [([], "at least one"), (["arm64", "aarch64"], "once"), (["any"], "alone")])
def test_a_bad_preference_names_the_field_and_the_fix(written, says):
    with pytest.raises(InvalidConfig, match="ArmadaConfig.architecture") as caught:
        ArmadaConfig(architecture=written)
    assert says in caught.value.fix


def test_spill_after_needs_a_positive_number_and_a_preference():
    assert ArmadaConfig(architecture=["arm64", "amd64"], spill_after=30).spill_after == 30.0
    assert ArmadaConfig(spill_after=30).spill_after == 30.0  # the preference may come from the project or platform
    with pytest.raises(InvalidConfig, match="spill_after"):
        ArmadaConfig(architecture=["arm64", "amd64"], spill_after=0)
    with pytest.raises(InvalidConfig, match="only a preference spills"):
        ArmadaConfig(architecture="arm64", spill_after=30)


def test_the_template_carries_the_order_and_reads_it_back():
    spec = SubmissionSpec.from_config(ArmadaConfig(architecture=["arm64", "amd64"], spill_after=45), {})
    custom = spec.to_custom()
    assert (custom["architecture"], custom["spill_after"]) == (["arm64", "amd64"], 45.0)
    assert SubmissionSpec.from_custom(custom).architecture == PREFER_ARM and spec.prefers


def test_the_environment_variable_carries_a_preference():
    assert env_defaults({"ARMADA_FLYTE_ARCHITECTURE": "arm64,amd64"}) == {"architecture": PREFER_ARM}


# ---- the platform's node-group file ----
def embedded_groups(**extra) -> NodeGroups:
    data = NodeGroups.preset("embedded").model_dump(mode="json")
    data.pop("default_architecture")
    return NodeGroups.from_mapping({**data, **extra})


def test_the_node_group_file_sets_a_platform_order_and_the_default_wait():
    groups = embedded_groups(architecture_preference=["arm64", "amd64"], spill_after_seconds=60)
    resolved = resolve_architecture(None, "none", groups)
    assert (resolved.architecture, resolved.source, resolved.preference) == (ARM, "platform", PREFER_ARM)
    assert groups.spill_after_seconds == 60
    assert NodeGroups.preset("embedded").spill_after_seconds == 120


def test_the_platform_order_and_a_default_architecture_exclude_each_other():
    data = NodeGroups.preset("embedded").model_dump(mode="json")
    with pytest.raises(InvalidConfig, match="not both"):
        NodeGroups.from_mapping({**data, "architecture_preference": ["arm64", "amd64"]})


# ---- narrowing, as `any` is narrowed ----
def test_a_platform_without_the_first_leaves_the_second_pinned():
    groups = NodeGroups.from_mapping({"architectures": {"amd64": {}}})
    resolved = resolve_architecture(PREFER_ARM, "task", groups)
    assert (resolved.architecture, resolved.preference) == (AMD, ())
    assert "the platform" in resolved.narrowed_by[0]


def test_an_image_without_the_second_pins_the_first():
    image = ImageArchitectures("repo/app:1", (ARM,), "its registry")
    resolved = resolve_architecture(PREFER_ARM, "task", NodeGroups.preset("embedded"), images=[image])
    assert (resolved.architecture, resolved.preference) == (ARM, ())


def test_an_image_with_neither_is_no_common_architecture():
    groups = NodeGroups.from_mapping({"architectures": {"amd64": {}}})
    image = ImageArchitectures("repo/app:1", (ARM,), "its registry")
    with pytest.raises(NoCommonArchitecture, match=r"'\[amd64, arm64\]' \(set by task\).*this platform offers amd64"):
        resolve_architecture((AMD, ARM), "task", groups, images=[image])


def test_the_order_is_kept():
    resolved = resolve_architecture((AMD, ARM), "task", NodeGroups.preset("embedded"))
    assert (resolved.architecture, resolved.preference) == (AMD, (AMD, ARM))


# ---- the jobs create plans ----
def planned(config=ArmadaConfig(architecture=["arm64", "amd64"], spill_after=30)):
    identity = RunIdentity(project="p", domain="d", run="r1", action="a1", task="t")
    context = ExecutionContext(identity, "s3://b/raw")
    return plan_job(python_template("print(1)", config), SubmitSettings(NodeGroups.preset("embedded")), context)


def test_create_plans_the_first_architecture_and_the_next_one_s_job():
    plan = planned()
    first, (later,) = plan.job, plan.later_steps
    assert first.pod_spec["nodeSelector"]["kubernetes.io/arch"] == "arm64" and first.labels[LABEL_ARCH] == "arm64"
    assert later.architecture == "amd64" and later.node_group == "amd64"
    assert later.job.pod_spec["nodeSelector"]["kubernetes.io/arch"] == "amd64"
    assert later.job.labels[LABEL_ARCH] == "amd64" and not later.job.pod_spec.get("tolerations")
    assert later.job.client_id != first.client_id and len(later.job.client_id) <= 100
    assert plan.spill_after == 30 and "-prefer-" in plan.job_set_id
    assert later.job.pod_spec["containers"] == first.pod_spec["containers"]


def test_a_gang_s_jobs_share_a_job_set_and_move_to_a_gang_of_the_next_architecture():
    plan = planned(ArmadaConfig(architecture=["arm64", "amd64"], gang_id="g", gang_cardinality=2))
    (later,) = plan.later_steps
    assert plan.job_set_id.endswith(f"-prefer-{plan.job.gang_id}")
    assert later.job.gang_id == f"{plan.job.gang_id}-amd64"


def test_the_platform_default_wait_applies_when_the_task_sets_none():
    assert planned(ArmadaConfig(architecture=["arm64", "amd64"])).spill_after == 120


# ---- the spill-over's answers ----
def meta_of(plan, submitted_at=1000.0) -> ArmadaJobMetadata:
    steps = [(s.architecture, s.node_group, b"item-" + s.architecture.encode()) for s in plan.later_steps]
    return ArmadaJobMetadata(
        job_id="j0",
        job_set_id=plan.job_set_id,
        queue="flyte",
        architecture="arm64",
        node_group="arm64",
        submitted_at=submitted_at,
        spill_after_seconds=plan.spill_after,
        spill_jobs=encoded_steps(steps),
    )


def test_the_metadata_holds_every_step_and_survives_its_json():
    meta = ArmadaJobMetadata.decode(meta_of(planned()).encode())
    steps = meta.steps()
    assert [(s.index, s.architecture, s.node_group) for s in steps] == [(0, "arm64", "arm64"), (1, "amd64", "amd64")]
    assert steps[1].item == b"item-amd64"
    moved = meta.for_step(steps[1], "j1")
    assert (moved.job_id, moved.architecture, moved.node_group, moved.submitted_at) == ("j1", "amd64", "amd64", 1030.0)


@pytest.mark.parametrize(
    "state, now, due",
    [(JobState.QUEUED, 1029.0, False), (JobState.QUEUED, 1030.0, True), (JobState.LEASED, 1100.0, False)],
)
def test_a_spill_is_due_once_the_job_waited_queued_for_spill_after(state, now, due):
    meta = meta_of(planned())
    steps = meta.steps()
    assert spill.spill_due(meta, steps[0], 1, state, now) is due
    assert not spill.spill_due(
        meta.for_step(steps[1], "j1"), steps[1], 1, JobState.QUEUED, 5000.0
    )  # the last never spills


def test_only_a_job_cancelled_before_any_lease_once_it_waited_spill_after_was_spilled():
    meta = meta_of(planned())
    assert spill.was_spilled(meta, JobState.CANCELLED, None, 1030.0)
    assert not spill.was_spilled(meta, JobState.CANCELLED, None, 1029.0)  # cancelled by someone else
    leased = RunDetails("arm64-0", "c", "CANCELLED", 1.0, 0.0)
    assert not spill.was_spilled(meta, JobState.CANCELLED, leased, 1030.0)
    assert not spill.was_spilled(meta, JobState.RUNNING, None, 1030.0)


def test_a_gang_member_is_spilled_by_whichever_member_waited_longest():
    meta = replace(meta_of(planned()), gang_id="g-r1")
    assert spill.was_spilled(meta, JobState.CANCELLED, None, 1001.0)


BUSY_ARM = (
    "Excluded nodes:\n\t2:\tpod requires 1 cpu, but only 0 is available (node group arm64)\n"
    "\t2:\tnode does not match pod NodeSelector: required label kubernetes.io/arch = arm64, but node has amd64"
    " (node group amd64)\n"
)
TAINTED_ARM = "Excluded nodes:\n\t2:\ttaint kubernetes.io/arch=arm64:NoSchedule not tolerated (node group arm64)\n"
REAL_ARMADA_BUSY = "Excluded nodes:\n\t2:\tinsufficient resources available\n"


@pytest.mark.parametrize(
    "report, room",
    [(BUSY_ARM, True), (REAL_ARMADA_BUSY, True), (TAINTED_ARM, False), ("", False), (BUSY_ARM + TAINTED_ARM, False)],
)
def test_only_a_wait_for_room_spills(report, room):
    assert spill.waits_for_room(gist(report, "", "flyte", "arm64", NodeGroups.preset("embedded"))) is room
    assert not spill.waits_for_room(None)


def test_the_messages_say_what_happened():
    meta = meta_of(planned(ArmadaConfig(architecture=["arm64", "amd64"], spill_after=120)))
    steps = meta.steps()
    spilled = moves.Move(moves.SPILLED)
    assert moves.moved_message(steps, steps[0], None, 120) == ""
    assert moves.moved_message(steps, steps[1], spilled, 120) == (
        "spilled from arm64 to amd64 after 120 s queued: no arm64 node had room"
    )
    assert spill.spilling_message(steps, steps[0], meta).startswith("spilling from arm64 to amd64")
    assert spill.spill_info(steps, meta) == {
        "architecture_preference": ["arm64", "amd64"],
        "spill_after_seconds": 120.0,
    }
    assert moves.move_info(steps, steps[1], spilled, 120) == {
        "moved_from": "arm64",
        "why": "no arm64 node had room after 120 s queued",
        "moved_by": "spilled",
        "spilled_from": "arm64",
    }


def test_a_spill_cancel_is_sent_again_only_after_a_pause():
    cancels = spill.SpillCancels(capacity=2)
    assert cancels.due("j0", 100.0) == spill.JOB_SET  # the first: every queued job of the task's job set
    assert cancels.due("j0", 104.0) == "" and cancels.due("j0", 105.5) == spill.JOB_ALONE  # again: the job only
    assert cancels.due("j1", 100.0) == cancels.due("j2", 100.0) == spill.JOB_SET
    assert cancels.due("j0", 106.0) == spill.JOB_SET  # j0 was dropped (bounded): as if never sent


# ---- moving on at once: which rejections and failures say waiting cannot help ----
NODE_LINES = "pool default:\nNode: none\nNumber of nodes in cluster: 4\nExcluded nodes:\n"


@pytest.mark.parametrize(
    "reason, evidence",
    [
        (
            NODE_LINES + "\t2:\tpod requires 2 cpu, but only 1 is available (node group arm64)\n---",
            "2 nodes: pod requires",
        ),
        (NODE_LINES + "  4:  insufficient resources available\n---", "4 nodes: insufficient resources available"),
        (
            NODE_LINES + "\t4:\tnode does not match pod NodeSelector: required label x = y, but node has z"
            " (node group amd64)\n---",
            "no node of group arm64",
        ),
        ("pool default:\n: 3 out of 4 pods schedulable\n", "3 out of 4 pods schedulable"),
    ],
)
def test_a_rejection_about_the_group_s_nodes_moves(reason, evidence):
    move = moves.rejection_moves(reason, "arm64")
    assert move is not None and move.kind == moves.REJECTED and evidence in move.evidence


@pytest.mark.parametrize(
    "reason",
    [
        "pool default:\njob/gang requests resources cpu: 64 which exceeds the total limit of cpu: 16 for its "
        "queue/priority class\n\n---",
        "gang g already has its 2 members",
        "",
    ],
)
def test_a_rejection_every_architecture_would_get_does_not_move(reason):
    assert moves.rejection_moves(reason, "arm64") is None


@pytest.mark.parametrize(
    "reason, category, evidence",
    [
        ("Container main failed with exit code 255 because Error: exec /bin/a0: exec format error", "", "exec format"),
        (
            "Back-off pulling image: no matching manifest for linux/arm64/v8 in the manifest list entries",
            "",
            "linux/arm64",
        ),
        ("failed to pull and unpack image: no match for platform in manifest: not found", "", "no match for platform"),
        ("image reg/app:1 has no linux/arm64 variant, which node set arm64 needs", "", "linux/arm64 variant"),
        ("Container main failed with exit code 1", "wrong-platform", "Armada's failure category wrong-platform"),
    ],
)
def test_a_platform_mismatch_moves(reason, category, evidence):
    move = moves.platform_mismatch(reason, category, {"wrong-platform"})
    assert move is not None and move.kind == moves.PLATFORM_MISMATCH and evidence in move.evidence


@pytest.mark.parametrize(
    "reason, category",
    [
        ("Container main failed with exit code 1 because Error: disk full", "user_error"),
        ("image reg/app:1 could not be pulled for linux/arm64 (node set arm64): manifest unknown", ""),
        ("ImportError: libfoo.so.1: cannot open shared object file: No such file or directory", ""),
    ],
)
def test_other_failures_do_not_move(reason, category):
    assert moves.platform_mismatch(reason, category, {"wrong-platform"}) is None


def test_the_failed_event_s_category_is_kept_with_the_run():
    from armada_client.armada import event_pb2

    from armada_flyte.connector.poll.job_set_streams import RunFacts

    event = event_pb2.JobFailedEvent(job_id="j", reason="r", failure_category="wrong-platform")
    assert RunFacts().after("failed", event).failure_category == "wrong-platform"


def test_the_admin_names_the_categories_in_a_setting():
    from armada_flyte.connector.config.settings import resolve_settings

    settings = resolve_settings(platform_mismatch_categories="wrong-platform, no-variant")
    assert settings.platform_mismatch_categories == ("wrong-platform", "no-variant")


def test_an_ended_job_s_reason_is_asked_once_and_kept():
    """Every poll of a task that moved on at once walks its rejected step again: Armada is asked its reason once."""
    import asyncio

    from armada_flyte.connector.poll.decision import Fact, Fetch, JobFacts, Known
    from armada_flyte.connector.poll.gather import FactFinder

    asked = []

    class Api:
        async def error_of(self, job_id: str) -> str:
            asked.append(job_id)
            return "pool default:\nExcluded nodes:\n\t2:\tx" if job_id == "j0" else ""

    finder = FactFinder(Api(), None, None, 1.0, NodeGroups.preset("embedded"))
    meta = meta_of(planned())

    def reason_of(job_id: str, state: int) -> str:
        known = Known.of(meta, 1000.0).learnt(0, JobFacts(job_id, state))
        return asyncio.run(finder.fetch(known, [Fetch(0, Fact.REASON)])).jobs[0].reason

    assert reason_of("j0", JobState.REJECTED) == reason_of("j0", JobState.REJECTED) != ""
    assert reason_of("jq", JobState.REJECTED) == reason_of("jq", JobState.REJECTED) == ""  # none yet: asked again
    assert asked == ["j0", "jq", "jq"]
