"""A Gang's rules, without Flyte running anything: the derived id and size, one placement for the whole
gang, and a declared size that differs from the members added, refused with both numbers."""

from __future__ import annotations

import asyncio

import flyte
import pytest

from armada_flyte import ArmadaConfig, Gang, GangCardinalityMismatch
from armada_flyte.architecture import Architecture
from armada_flyte.errors import ArchitectureConflict, InvalidConfig
from armada_flyte.task.gang import (
    GangMember,
    all_results_or_first_failure,
    attempt_mark,
    derived_gang_id,
    plan_members,
    retried_members,
)

pytestmark = pytest.mark.pure

ARM, AMD = Architecture.arm64, Architecture.amd64


class FakeTask:
    """What a Gang reads of a task: its name and plugin config."""

    def __init__(self, name: str, config: object):
        self.name = name
        self.plugin_config = config


def members(*configs: ArmadaConfig, task: str = "train") -> list[GangMember]:
    return [GangMember(FakeTask(task, c), (), {"shard": i}, c) for i, c in enumerate(configs)]


def test_the_id_names_the_gang_the_parent_action_its_attempt_and_the_count_of_gangs_of_that_name():
    assert derived_gang_id("trainers", "a0", "0", 1) == "trainers-a0-0-1"
    assert derived_gang_id("trainers", "a0", "0", 2) != derived_gang_id("trainers", "a0", "0", 1)
    assert derived_gang_id("trainers", "a0", "0", 1) != derived_gang_id("trainers", "a1", "0", 1)
    assert derived_gang_id("trainers", "a0", "1", 1) != derived_gang_id("trainers", "a0", "0", 1)


def test_on_a_backend_the_attempt_is_flytes_and_the_same_each_time_the_attempt_runs():
    assert attempt_mark("remote", 2) == attempt_mark("remote", 2) == "2"
    assert attempt_mark("remote", 1) != attempt_mark("remote", 2)


def test_locally_every_attempt_gets_a_mark_of_its_own():
    """A local parent reads attempt 0 on every retry: its gangs would share an id Armada has already placed."""
    marks = {attempt_mark("local", 0) for _ in range(5)}
    assert len(marks) == 5 and all(m.startswith("local") for m in marks)


def test_members_with_retries_are_named_once_each():
    plain, retried, again = members(ArmadaConfig(), ArmadaConfig(), ArmadaConfig())
    plain.task.retries, retried.task.retries, again.task.retries = 0, 2, flyte.RetryStrategy(count=1)
    again.task.name = "evaluate"
    assert retried_members([plain, retried, again]) == ["evaluate", "train"]
    assert retried_members([plain]) == []


def test_every_member_gets_the_same_id_and_the_number_of_members_as_its_size():
    configs = plan_members("trainers", "trainers-a0-1", members(*[ArmadaConfig(architecture="arm64")] * 4))
    assert {(c.gang_id, c.gang_cardinality, c.architecture) for c in configs} == {("trainers-a0-1", 4, ARM)}
    assert len(configs) == 4


def test_a_declared_size_of_five_with_four_members_names_both_numbers_and_the_fix():
    with pytest.raises(GangCardinalityMismatch) as info:
        plan_members("trainers", "g", members(*[ArmadaConfig()] * 4), cardinality=5)
    assert (info.value.declared, info.value.members) == (5, 4)
    message = str(info.value)
    assert "declares 5 members, but 4 were added" in message
    assert "add the 1 missing member(s)" in message and "declare 4" in message and "nothing was submitted" in message
    assert "Armada would hold them until all 5 came" in message


def test_a_hand_written_gang_cardinality_on_a_member_is_a_declaration_too():
    three = ArmadaConfig(gang_id="trio", gang_cardinality=3)
    with pytest.raises(GangCardinalityMismatch) as info:
        plan_members("trio", "g", members(three, three, three, three))
    assert (info.value.declared, info.value.members) == (3, 4)
    message = str(info.value)
    assert "ArmadaConfig(gang_cardinality=3)" in message and "remove 1 member(s)" in message
    assert "Armada would refuse the members beyond 3" in message


def test_a_hand_written_gang_that_agrees_is_renamed_to_the_derived_id():
    two = ArmadaConfig(gang_id="pair", gang_cardinality=2)
    assert {c.gang_id for c in plan_members("pair", "pair-a0-1", members(two, two))} == {"pair-a0-1"}


def test_members_asking_for_different_architectures_are_refused_naming_each():
    with pytest.raises(ArchitectureConflict) as info:
        plan_members("mixed", "g", members(ArmadaConfig(architecture="arm64"), ArmadaConfig(architecture="amd64")))
    message = str(info.value)
    assert (
        "arm64 for train" in message and "amd64 for train" in message and "Gang('mixed', architecture=...)" in message
    )


def test_the_gangs_architecture_places_every_member_whatever_their_own():
    own = members(ArmadaConfig(architecture="arm64"), ArmadaConfig(architecture="amd64", spill_after=None))
    assert {c.architecture for c in plan_members("g", "g-a0-1", own, architecture="any")} == {"any"}
    moved = plan_members("g", "g-a0-1", own, architecture=(ARM, AMD), spill_after=30.0)
    assert {(c.architecture, c.spill_after) for c in moved} == {((ARM, AMD), 30.0)}


def test_a_preference_shared_by_the_members_stays_with_its_spill_after():
    prefer = ArmadaConfig(architecture=["arm64", "amd64"], spill_after=5)
    assert {(c.architecture, c.spill_after) for c in plan_members("g", "g-1", members(prefer, prefer))} == {
        ((ARM, AMD), 5.0)
    }


@pytest.mark.parametrize("field, values", [("queue", ("ml", "batch")), ("job_set_id", ("a", "b"))])
def test_members_in_different_queues_or_job_sets_are_refused(field, values):
    with pytest.raises(ArchitectureConflict, match=f"different {field} values"):
        plan_members("g", "g-1", members(*(ArmadaConfig(**{field: v}) for v in values)))


def test_members_that_disagree_on_interruptible_are_refused():
    steady, spot = members(ArmadaConfig(), ArmadaConfig())
    spot.task.interruptible = True
    steady.task.interruptible = False
    with pytest.raises(ArchitectureConflict, match="different interruptible values"):
        plan_members("g", "g-1", [steady, spot])


def test_an_empty_gang_submits_nothing_unless_it_declared_members():
    assert plan_members("g", "g-1", []) == []
    with pytest.raises(GangCardinalityMismatch, match="declares 2 members, but 0 were added"):
        plan_members("g", "g-1", [], cardinality=2)


def test_only_armada_tasks_join_a_gang():
    with pytest.raises(InvalidConfig, match="only Armada tasks join a gang"):
        Gang("g").add(FakeTask("plain", None), x=1)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"name": "has space"}, "Gang.name"),
        ({"name": "x" * 64}, "Gang.name"),
        ({"cardinality": 0}, "Gang.cardinality"),
        ({"cardinality": True}, "Gang.cardinality"),
        ({"architecture": "sparc"}, "Gang.architecture"),
        ({"architecture": "arm64", "spill_after": 5}, "ArmadaConfig.spill_after"),
    ],
)
def test_a_gangs_own_settings_are_checked_when_it_is_made(kwargs, field):
    with pytest.raises(InvalidConfig) as info:
        Gang(**kwargs)
    assert info.value.field == field


def test_a_gang_outside_a_flyte_task_says_where_it_belongs():
    gang = Gang("g")
    gang.add(FakeTask("train", ArmadaConfig()))
    with pytest.raises(RuntimeError, match="runs inside a Flyte task"):
        asyncio.run(gang.run())


def test_a_sync_with_block_says_to_use_async_with():
    with pytest.raises(TypeError, match="async with"):
        with Gang("g"):
            pass


def test_results_before_the_gang_ran_say_so():
    gang = Gang("g")
    with pytest.raises(RuntimeError, match="has not run yet"):
        print(gang.results)


def test_the_members_results_come_back_in_the_order_added():
    async def member(value: int, delay: float) -> int:
        await asyncio.sleep(delay)
        return value

    async def scenario():
        calls = [asyncio.ensure_future(member(v, d)) for v, d in ((0, 0.03), (1, 0.0), (2, 0.01))]
        return await all_results_or_first_failure(calls)

    assert asyncio.run(scenario()) == [0, 1, 2]


def test_the_first_member_to_fail_cancels_the_others_and_its_error_is_raised():
    async def scenario():
        forever = asyncio.Event()
        waiting = [asyncio.ensure_future(forever.wait()) for _ in range(3)]

        async def fails():
            raise ValueError("member 3 fails")

        with pytest.raises(ValueError, match="member 3 fails"):
            await all_results_or_first_failure([*waiting, asyncio.ensure_future(fails())])
        return waiting

    assert all(call.cancelled() for call in asyncio.run(scenario()))


def test_a_cancelled_parent_cancels_every_member():
    async def scenario():
        forever = asyncio.Event()
        members = [asyncio.ensure_future(forever.wait()) for _ in range(2)]
        parent = asyncio.ensure_future(all_results_or_first_failure(members))
        await asyncio.sleep(0)
        parent.cancel()
        with pytest.raises(asyncio.CancelledError):
            await parent
        return members

    assert all(call.cancelled() for call in asyncio.run(scenario()))
