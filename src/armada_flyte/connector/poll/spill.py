"""An ordered architecture preference, on the poll side: when a step's job was spilled, when to spill
it, and what the task then says.

Armada's scheduler honours only required node affinity, so "arm64 when there is room, else amd64" is
done by the connector: the job is submitted for the first architecture; if it still waits for room
after `spill_after` seconds, the connector cancels it (only while it is queued) and, once Armada says
CANCELLED, submits the same job for the next architecture (create built every step's job:
`submit.plan`).

Flyte's GetTask cannot hand back new metadata, so nothing learned after create can be stored. What
create stores is enough for any connector replica to find the current step from Armada alone:
- every step's job is kept in the metadata (`spill_jobs`), with a client id of its own, so submitting a
  step twice (two replicas, a retry) returns the one job Armada already has;
- the task's jobs live in a job set of their own (a gang's: the gang's), so "cancel it if it is still
  queued" is one CancelJobSet with a QUEUED filter, which Armada applies only to jobs still queued: a
  job leased just before is kept;
- a step that ended CANCELLED without ever being leased, while a later step exists, was spilled: its
  next step is the current one.

Pure: `decision.py` asks these questions; `SpillCancels` is a bounded memo of the process.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Optional, Sequence

from armada_flyte.armada_names import JobState
from armada_flyte.connector.model.metadata import ArmadaJobMetadata, Step
from armada_flyte.connector.model.run_details import RunDetails
from armada_flyte.connector.poll.queued_report import QueuedReport

SPILL_REASON = "armada-flyte: spill to next architecture"
"""The reason sent with the cancel that spills a job (Armada allows at most 50 bytes)."""
CANCEL_RESEND_SECONDS = 5.0
"""A spill's cancel is sent again only after this long: Armada's state reads QUEUED for a moment after it."""
MAX_REMEMBERED_CANCELS = 10_000


JOB_SET = "job set"
"""A spill's first cancel: every queued job of the task's job set (a gang's: every member's step at once)."""
JOB_ALONE = "job"
"""A spill's cancel sent again: the waiting job only. By then a member of its gang (or another replica) may have
submitted the next step's job, queued in the same job set, which a job-set cancel would end too (seen in CI: a
gang member's resend, its arm64 job still reading QUEUED 5 s after the cancel on a machine at load 100,
cancelled its partner's amd64 job)."""


class SpillCancels:
    """When this process last sent each job's spill cancel (bounded), so polls in the moment before Armada
    says CANCELLED don't send it again, and a cancel sent again names the job alone. Soft state: another
    replica may send one more, which is harmless."""

    def __init__(self, capacity: int = MAX_REMEMBERED_CANCELS) -> None:
        self._capacity = capacity
        self._sent: OrderedDict[str, float] = OrderedDict()

    def due(self, job_id: str, now: float) -> str:
        """What to cancel now for the job's spill (and note that it is sent): `JOB_SET` the first time,
        `JOB_ALONE` once `CANCEL_RESEND_SECONDS` have passed since, else "" (nothing)."""
        last = self._sent.get(job_id)
        if last is not None and now - last < CANCEL_RESEND_SECONDS:
            return ""
        self._sent[job_id] = now
        self._sent.move_to_end(job_id)
        while len(self._sent) > self._capacity:
            self._sent.popitem(last=False)
        return JOB_SET if last is None else JOB_ALONE


def was_spilled(step_meta: ArmadaJobMetadata, state: int, details: Optional[RunDetails], now: float) -> bool:
    """The step's job (`step_meta`: its metadata, `ArmadaJobMetadata.for_step`) ended CANCELLED without ever
    being leased, once it could have been spilled: the spill's cancel, which only touches queued jobs. A task
    alone could be spilled once it had waited `spill_after`; a gang member at any time, since the member that
    waited longest spills them all. Flyte stops asking once it cancels a task itself."""
    waited = now - step_meta.submitted_at
    could = bool(step_meta.gang_id) or waited >= step_meta.spill_after_seconds
    return state == JobState.CANCELLED and (details is None or not details.node) and could


def spill_due(step_meta: ArmadaJobMetadata, step: Step, last: int, state: int, now: float) -> bool:
    """The step's job has waited queued for its `spill_after`, and a later step exists."""
    waited = now - step_meta.submitted_at
    return step.index < last and state == JobState.QUEUED and waited >= step_meta.spill_after_seconds


def waits_for_room(report: Optional[QueuedReport]) -> bool:
    """Armada's report says the job waits only for room on its node group's nodes (they are busy), which
    another architecture's nodes may have; any other reason (a taint, a selector, fair share) it would not fix."""
    return report is not None and report.waits_for_room


def spill_helps(report: Optional[QueuedReport]) -> bool:
    """A spill may end the wait: the job waits for room, or its node group has no node left."""
    return waits_for_room(report) or (report is not None and report.no_node_of_group)


def spill_info(steps: Sequence[Step], meta: ArmadaJobMetadata) -> dict[str, Any]:
    """The `custom_info` entries of a preference: the order and the wait (where the task moved from, and why,
    are `moves.move_info`'s)."""
    return {
        "architecture_preference": [s.architecture for s in steps],
        "spill_after_seconds": meta.spill_after_seconds,
    }


def spilling_message(steps: Sequence[Step], current: Step, meta: ArmadaJobMetadata) -> str:
    """What the poll that cancels the job says: it moves on once Armada confirms the cancel."""
    after = steps[current.index + 1].architecture
    return (
        f"spilling from {current.architecture} to {after}: queued over {meta.spill_after_seconds:g} s and no "
        f"{current.architecture} node has room; its job is cancelled while still queued, then submitted for {after}"
    )
