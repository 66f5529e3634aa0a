"""A gang that sizes itself: the member calls a parent task adds, submitted as one Armada gang.

Written by hand, a gang is `ArmadaConfig(gang_id=..., gang_cardinality=N)` on every member, and a
wrong N leaves the members waiting for one that never comes. A `Gang` counts the calls added to it,
derives an id unique to the parent's action and attempt, and gives every member the same id, size and
architecture through Flyte's per-call override (`task.override(plugin_config=...)`), so nothing is
written twice. The rules (`plan_members`, `derived_gang_id`) are pure; `Gang` only gathers the calls.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import secrets
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import flyte

from armada_flyte.architecture import ArchitectureRequest, parse_request
from armada_flyte.errors import ArchitectureConflict, GangCardinalityMismatch, InvalidConfig
from armada_flyte.spec import ArmadaConfig
from armada_flyte.task import flyte_internals

log = logging.getLogger(__name__)

MAX_GANG_NAME = 63
"""Characters a gang's name may have (it heads the derived id, which the connector scopes to the run)."""
_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
_SEQUENCE_KEY = "armada_flyte.Gang:"
"""Prefix of the keys under which the parent's call counter numbers its gangs of one name."""


@dataclass(frozen=True)
class GangMember:
    """One call added to a gang: the task, its arguments and its own (un-ganged) config."""

    task: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    config: ArmadaConfig

    @property
    def name(self) -> str:
        return str(getattr(self.task, "name", self.task))


def derived_gang_id(name: str, action: str, attempt: str, sequence: int) -> str:
    """The gang's id: its name, the parent's action and attempt (`attempt_mark`), and the parent's count of
    gangs of that name (Flyte's own numbering of the parent's calls). Each member gets the same id; the
    connector appends the run."""
    return f"{name}-{action}-{attempt}-{sequence}"


def attempt_mark(mode: str, attempt_number: int) -> str:
    """What tells the parent's attempts apart, so a retried parent makes a new gang (Armada lets no new member
    join a gang it has placed). On a backend, Flyte's attempt number: the same again if the parent's pod runs
    the attempt twice, so members submitted before and after keep one id. A local parent sees attempt 0 on
    every retry (Flyte numbers only pods' attempts), but runs each attempt once: a fresh token."""
    if mode == "remote":
        return str(attempt_number)
    return "local" + secrets.token_hex(4)


def retried_members(members: Sequence[GangMember]) -> list[str]:
    """The members whose task has `retries=`, which a gang can't honour: a retried member would wait for
    partners that have already run (Armada counts only members that haven't ended), so it would never start."""
    counts = {m.name: getattr(m.task, "retries", 0) for m in members}
    return sorted(name for name, retries in counts.items() if (getattr(retries, "count", retries) or 0) > 0)


def plan_members(
    name: str,
    gang_id: str,
    members: Sequence[GangMember],
    *,
    cardinality: Optional[int] = None,
    architecture: Optional[ArchitectureRequest] = None,
    spill_after: Optional[float] = None,
    node_uniformity_label: Optional[str] = None,
) -> list[ArmadaConfig]:
    """Each member's config as the gang submits it, or the reason the gang can't be submitted at all.

    Raises `GangCardinalityMismatch` when a declared size (the Gang's `cardinality`, or a member's own
    `gang_cardinality`) differs from the number of members, and `ArchitectureConflict` when members ask
    for different architectures or uniformity labels and the Gang names none, or for different queues, job
    sets or interruptible flags.
    """
    count = len(members)
    declarations = [(cardinality, f"Gang({name!r}, cardinality={cardinality})")] if cardinality is not None else []
    declarations += [
        (m.config.gang_cardinality, f"task {m.name!r} (ArmadaConfig(gang_cardinality={m.config.gang_cardinality}))")
        for m in members
        if m.config.gang_cardinality is not None
    ]
    for declared, declared_by in declarations:
        if declared != count:
            raise GangCardinalityMismatch(name, declared, count, declared_by)
    if not members:
        return []
    if architecture is not None:  # the Gang's placement replaces the members' own
        placement = {"architecture": architecture, "spill_after": spill_after}
    else:
        placement = {
            "architecture": _agreed(name, members, "architecture", gang_option=True),
            "spill_after": spill_after if spill_after is not None else _agreed(name, members, "spill_after", True),
        }
    placement["gang_node_uniformity_label"] = (
        node_uniformity_label
        if node_uniformity_label is not None
        else _agreed(name, members, "gang_node_uniformity_label", gang_option=True)
    )
    for field in ("queue", "job_set_id", "interruptible"):  # interruptible: Armada wants one priority class
        _agreed(name, members, field, gang_option=False)
    return [dataclasses.replace(m.config, gang_id=gang_id, gang_cardinality=count, **placement) for m in members]


def _agreed(name: str, members: Sequence[GangMember], field: str, gang_option: bool) -> Any:
    """The one value every member gives `field`, or `ArchitectureConflict` naming who says what."""
    values: dict[Any, list[str]] = {}
    for member in members:
        value = getattr(member.task, field, None) if field == "interruptible" else getattr(member.config, field)
        values.setdefault(value, []).append(member.name)
    if len(values) == 1:
        return next(iter(values))
    said = "; ".join(f"{_said(value)} for {', '.join(sorted(set(tasks)))}" for value, tasks in values.items())
    fix = f"give every member's TaskEnvironment the same ArmadaConfig({field}=...)"
    if field == "interruptible":
        fix = "give every member the same interruptible= (on its task or its TaskEnvironment)"
    if gang_option:
        option = {"gang_node_uniformity_label": "node_uniformity_label"}.get(field, field)
        fix = f"set Gang({name!r}, {option}=...) for the whole gang, or " + fix
    raise ArchitectureConflict(
        f"gang {name!r}: its members ask for different {field} values ({said}). One gang is placed as one: {fix}."
    )


def _said(value: Any) -> str:
    if value is None:
        return "none (the default)"
    if isinstance(value, tuple):
        return "[" + ", ".join(v.value for v in value) + "]"
    return str(getattr(value, "value", value))


class Gang:
    """Member calls of a parent task, submitted together as one Armada gang (all start, or none).

    In the body of an async parent task::

        async with Gang("trainers") as gang:
            for shard in range(4):
                gang.add(train, shard=shard)
        results = gang.results          # in the order added

    or `gang.add(...)` then `results = await gang.run()`. The gang's id and size are derived (don't write
    `gang_id` or `gang_cardinality`); `cardinality=` checks the count before anything is submitted.
    `architecture=` places the whole gang (one architecture, a preference the gang moves through as a whole,
    or `"any"`); without it the members' own must agree. The first member to fail cancels the others.
    Members run once (their own `retries=` can't work in a gang); `retries=` on the parent runs a new gang.
    """

    def __init__(
        self,
        name: str = "gang",
        *,
        cardinality: Optional[int] = None,
        architecture: Any = None,
        spill_after: Optional[float] = None,
        node_uniformity_label: Optional[str] = None,
    ):
        if not isinstance(name, str) or len(name) > MAX_GANG_NAME or not _NAME.fullmatch(name):
            raise InvalidConfig(
                "Gang.name", name, f"use letters, digits, '.', '_' or '-' ({MAX_GANG_NAME} at most), e.g. 'trainers'"
            )
        if cardinality is not None and (
            isinstance(cardinality, bool) or not isinstance(cardinality, int) or cardinality < 1
        ):
            raise InvalidConfig("Gang.cardinality", cardinality, "use a whole number >= 1, or leave it out")
        # ArmadaConfig checks these as it does for a task (a spill_after needs a preference, a label a gang).
        checked = ArmadaConfig(
            architecture=parse_request(architecture, "Gang.architecture"),
            spill_after=spill_after,
            gang_id="check" if node_uniformity_label is not None else None,
            gang_cardinality=2 if node_uniformity_label is not None else None,
            gang_node_uniformity_label=node_uniformity_label,
        )
        self.name = name
        self.cardinality = cardinality
        self.architecture = checked.architecture
        self.spill_after = checked.spill_after
        self.node_uniformity_label = node_uniformity_label
        self.gang_id: Optional[str] = None
        """Set when the gang is submitted."""
        self._members: list[GangMember] = []
        self._results: Optional[list[Any]] = None
        self._submitted = False

    def add(self, task: Any, /, *args: Any, **kwargs: Any) -> None:
        """Add one call of `task` (an Armada task) with these arguments; it is submitted with the others."""
        if self._submitted:
            raise RuntimeError(f"gang {self.name!r} was already submitted: add every member before it runs")
        config = getattr(task, "plugin_config", None)
        if not isinstance(config, ArmadaConfig):
            raise InvalidConfig(
                f"Gang({self.name!r}).add",
                getattr(task, "name", task),
                "only Armada tasks join a gang: give the task's TaskEnvironment plugin_config=ArmadaConfig(...)",
            )
        self._members.append(GangMember(task, args, kwargs, config))

    def __len__(self) -> int:
        return len(self._members)

    @property
    def results(self) -> list[Any]:
        """Each member's result, in the order the members were added (once the gang has run)."""
        if self._results is None:
            raise RuntimeError(f"gang {self.name!r} has not run yet: read results after `async with` or `await run()`")
        return self._results

    async def run(self) -> list[Any]:
        """Submit every member as one gang, wait for all, and return their results in the order added."""
        if self._submitted:
            raise RuntimeError(f"gang {self.name!r} was already submitted; a Gang runs once")
        tctx = flyte.ctx()
        if not tctx:
            raise RuntimeError(
                f"gang {self.name!r} runs inside a Flyte task: use it in the body of the async task that calls the "
                "members (Armada tasks are leaves, so that task is a plain Flyte task)"
            )
        self._submitted = True
        sequence = flyte_internals.next_call_number(tctx, _SEQUENCE_KEY + self.name)
        attempt = attempt_mark(tctx.mode, tctx.attempt_number)
        self.gang_id = derived_gang_id(self.name, tctx.action.name, attempt, sequence)
        configs = plan_members(
            self.name,
            self.gang_id,
            self._members,
            cardinality=self.cardinality,
            architecture=self.architecture,
            spill_after=self.spill_after,
            node_uniformity_label=self.node_uniformity_label,
        )
        if retried := retried_members(self._members):
            log.warning(
                "gang %s: ignoring retries= of %s: a gang's members run once (a retried member would wait for "
                "partners that already ran); retry the gang as a whole with retries= on the task that holds it",
                self.name,
                ", ".join(retried),
            )
        once = flyte.RetryStrategy(count=0)  # override(retries=0) would keep the task's own: 0 is falsy there
        calls = [
            asyncio.ensure_future(m.task.override(plugin_config=config, retries=once).aio(*m.args, **m.kwargs))
            for m, config in zip(self._members, configs)
        ]
        self._results = await all_results_or_first_failure(calls)
        return self._results

    async def __aenter__(self) -> Gang:
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, traceback: Any) -> None:
        if exc_type is None:
            await self.run()

    def __enter__(self) -> Gang:
        raise TypeError(
            f"gang {self.name!r}: use `async with Gang(...)` in an async task; a sync task calls its members one at "
            "a time, and a gang's members must all be submitted before any starts"
        )

    def __exit__(self, *exc: Any) -> None:  # pragma: no cover - __enter__ always raises
        return None


async def all_results_or_first_failure(calls: list[asyncio.Future[Any]]) -> list[Any]:
    """Every call's result; or, once one fails, the others cancelled (a gang without a member can't finish)
    and that failure raised."""
    if not calls:
        return []
    try:
        done, pending = await asyncio.wait(calls, return_when=asyncio.FIRST_EXCEPTION)
    except BaseException:  # the parent was cancelled: so are its members
        for call in calls:
            call.cancel()
        await asyncio.gather(*calls, return_exceptions=True)
        raise
    failed = [call for call in calls if call in done and not call.cancelled() and call.exception() is not None]
    if failed:
        for call in pending:
            call.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        raise failed[0].exception()  # type: ignore[misc]
    return [call.result() for call in calls]
