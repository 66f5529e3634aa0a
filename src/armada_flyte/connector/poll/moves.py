"""An ordered architecture preference, moving on at once when waiting cannot help: when the step's job was
rejected by Armada (no node of its group can ever hold it) or its run failed because the image cannot run
on that architecture (a platform mismatch). The spill (`spill.py`) waits `spill_after` for room; these don't.

Both are read from Armada's state alone, as the spill is, so any replica finds the same current step: a
REJECTED or FAILED job is terminal, and what it ended with (Armada's reason, the failed event's
`failure_category`, whether a0 wrote an error file) does not change. A step moved on from this way had no
run that did the task's work, so the next step is submitted in the same Flyte attempt (no retry is spent).

Not a move: a rejection for a limit every architecture shares (the queue's resource limit, floating
resources), and a failure a0 recorded. a0 catches what the task raises, writes it to its error file and
ends its container normally, so Armada says SUCCEEDED: a task that raised `ImportError: ... wrong ELF class`
fails as before (said as the missing image variant, `crash_reasons`). A FAILED job is one whose container
failed (its program could not start, its image could not be pulled, a0 itself died), so Armada's reason,
which never changes, is enough: the error file, which the next step shares (it sits at the attempt's
output path), is not read to decide.

A queued job whose node group has no node left (the scheduler's report: every node excluded, each for being
another group's; nodes that left after the submit check let the job in) moves at once too, before `spill_after`.
That needs a cancel, and Armada v0.22.7 keeps no cancel reason another replica can read, so the order of the
move carries it: the next step's job is submitted first, then the queued one cancelled. A step's job cancelled
before `spill_after` while the next step's job is in the task's job set was moved on from this way
(`NO_NODE`); one cancelled without it was cancelled by someone else, as before. A job whose group is only busy
(full, or too small: both servers word these alike), cordoned (real Armada's unschedulable taint) or of an
unknown group keeps the spill's wait. Gangs keep the spill too: a gang member's cancel already reads as a spill.

A gang moves as a whole: its members share one job set, and each step's members one gang id, so a member
reads from the job set's events (the status view's) whether a sibling of its step failed for a platform mismatch
(`sibling_mismatch`). Then its own job, if still queued or running, is cancelled (`GANG_MOVE_REASON`), and a
member whose job ended (cancelled, or failed otherwise) while a sibling failed that way moves on with the gang.

A member that succeeded stays done (Flyte may have read its answer), so the next step's gang is the members
that did not: `next_gang`. Its size is fixed only once every member of the step's gang has ended (one still
running may yet succeed, or be cancelled), so a moving member holds its next step until then (`GangWait`) and
cancels the siblings still in flight, as their own polls do. An ended job never changes, so every replica then
counts the same members, and the next step's jobs, one per moving member, agree on their gang's cardinality.

Pure: `decision.py` asks these questions; the words are here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

from armada_flyte.armada_names import TERMINAL_STATES, JobState
from armada_flyte.connector.model.metadata import ArmadaJobMetadata, Step
from armada_flyte.connector.poll.crash_reasons import MAX_EVIDENCE, wrong_architecture
from armada_flyte.connector.poll.job_set_streams import GangMember
from armada_flyte.connector.poll.queued_report import QueuedReport, excluded_nodes

SPILLED = "spilled"
REJECTED = "rejected"
PLATFORM_MISMATCH = "platform mismatch"
NO_NODE = "no node left"

QUEUED_MOVE_REASON = "armada-flyte: no node left, next architecture"
"""The reason sent with the cancel of a queued job whose node group has no node left, once the next step's job is
submitted (Armada allows at most 50 bytes)."""
QUEUED_MOVE_MARGIN_SECONDS = 5.0
"""No move at once this close to `spill_after`: its cancel, landing after `spill_after`, would read as a spill's."""

_FITS_NO_NODE = re.compile(
    r"Excluded nodes:|Number of nodes in cluster:|\d+ out of \d+ pods schedulable|even on an empty cluster"
)
"""The shapes of a rejection about nodes: Armada's node-matching report (v0.22.7 internal/scheduler/submitcheck.go
writes the pod scheduling context: "Node: none", "Number of nodes in cluster: N", "Excluded nodes:"), its
gang line ("N out of M pods schedulable"), and the embedded server's gang report."""

_PLATFORM_PULL = re.compile(
    r"no matching manifest for \S+"
    r"|no match for platform in manifest"
    r"|does not match the specified platform"
    r"|has no linux/\S+ variant",
    re.IGNORECASE,
)
"""A pull that found the image but not for the node's platform: Docker ("no matching manifest for linux/arm64 in
the manifest list entries", "... does not match the specified platform: wanted linux/arm64, actual: linux/amd64"),
containerd through the kubelet ("no match for platform in manifest: not found"), and the docker pod runner of the
embedded server ("image X has no linux/arm64 variant, which node set Y needs"). A bare "not found" is not one:
a missing image says that too."""


GANG_MOVE_REASON = "armada-flyte: gang moves to next architecture"
"""The reason sent with the cancel of a gang member whose sibling's run failed for a platform mismatch (Armada
allows at most 50 bytes)."""
GANG_CANCELLABLE = frozenset({JobState.SUBMITTED, JobState.QUEUED, JobState.LEASED, JobState.PENDING, JobState.RUNNING})
"""A member's own job in these states is cancelled when its gang moves on."""
GANG_FOLLOWS = frozenset({JobState.CANCELLED, JobState.FAILED, JobState.PREEMPTED})
"""A member's own job ended in these states moves on with its gang (a success stands: Flyte may have read it)."""

_FRAME = re.compile(r"^Container \S+ failed with exit code -?\d+ because (?:Error: )?")


@dataclass(frozen=True)
class Move:
    """How the task moved on from one step's job to the next step's."""

    kind: str
    """SPILLED, REJECTED, PLATFORM_MISMATCH or NO_NODE."""
    evidence: str = ""
    """What Armada said that shows it (a line of the reason, or the failure category)."""
    gang_size: int = 0
    """For a gang member that moved for a platform mismatch: its next step's gang size (0: not such a move)."""
    gang_done: tuple[str, ...] = ()
    """The jobs of its step's gang that had succeeded, and so are not in the next step's gang."""


@dataclass(frozen=True)
class NextGang:
    """The next step's gang, once every member of the step's gang ended: its size, and the jobs left out of it
    because they succeeded."""

    size: int
    done: tuple[str, ...]


@dataclass(frozen=True)
class GangWait:
    """A gang member that moves on for a platform mismatch while members of its step's gang are still in flight:
    the next step waits until they end (they are cancelled), so the next gang's size counts only members that
    did not succeed."""

    move: Move
    in_flight: tuple[str, ...]
    """The jobs of the step's gang that have not ended."""


def rejection_moves(reason: str, own_group: str) -> Optional[Move]:
    """The move for a rejected step's job, when Armada's reason says no node of its group can hold it (too big
    for every node, no node of the group at all, a gang that never fits); None for a rejection another
    architecture would get too (a queue's limit) or no reason yet."""
    if not _FITS_NO_NODE.search(reason):
        return None
    return Move(REJECTED, _rejection_gist(reason, own_group))


def platform_mismatch(reason: str, category: str, categories: Iterable[str]) -> Optional[Move]:
    """The move for a failed step's job, when its run failed because the image cannot run on the architecture:
    a category the admin lists (`platform_mismatch_categories`), an exec format error (or a loader's wrong-ELF
    crash) in Armada's reason, or a pull that found no variant for the platform. None otherwise."""
    if category and category in set(categories):
        return Move(PLATFORM_MISMATCH, f"Armada's failure category {category}")
    if crash := wrong_architecture(reason, "", ""):
        return Move(PLATFORM_MISMATCH, _cause(crash.evidence))
    for line in reason.splitlines():
        if _PLATFORM_PULL.search(line):
            return Move(PLATFORM_MISMATCH, _cause(line.strip())[:MAX_EVIDENCE])
    return None


def sibling_mismatch(own_job_id: str, members: Sequence[GangMember], categories: Iterable[str]) -> Optional[Move]:
    """The move of a gang member whose step's sibling (of `members`: the gang's jobs as its job set's events tell
    them) failed for a platform mismatch; None when none did."""
    for job_id, state, run in members:
        if job_id == own_job_id or state != JobState.FAILED:
            continue
        move = platform_mismatch(run.reason or "", run.failure_category, categories)
        if move is not None:
            return Move(PLATFORM_MISMATCH, f"gang member {job_id}: {move.evidence}"[:MAX_EVIDENCE])
    return None


def next_gang(size: int, own_job_id: str, members: Sequence[GangMember], move: Move) -> NextGang | GangWait:
    """The gang a member moves on to from a step whose gang (`size` members, `members` as the events tell them)
    ran and had a run fail for a platform mismatch: every member but those that succeeded. While a member other
    than this one has not ended, it may still succeed: wait for it."""
    in_flight = tuple(m.job_id for m in members if m.job_id != own_job_id and m.state not in TERMINAL_STATES)
    if in_flight:
        return GangWait(move, in_flight)
    done = tuple(sorted(m.job_id for m in members if m.state == JobState.SUCCEEDED))
    return NextGang(max(1, size - len(done)), done)


def moves_while_queued(step_meta: ArmadaJobMetadata, report: Optional[QueuedReport], waited: float) -> bool:
    """Whether a queued step's job moves on at once: the scheduler's report says its node group has no node left,
    it is in no gang, and `spill_after` is not about to spill it anyway."""
    return (
        report is not None
        and report.no_node_of_group
        and not step_meta.gang_id
        and waited + QUEUED_MOVE_MARGIN_SECONDS < step_meta.spill_after_seconds
    )


def may_have_moved_at_once(
    step_meta: ArmadaJobMetadata, state: Optional[int], now: float, report_after: Optional[float]
) -> bool:
    """Whether a poll may have moved the step's job on at once while it was queued: it was cancelled, or it has
    waited since a report could have been read (`report_after`: the poll's `queued_report_after_seconds`; None:
    not known). The poll that moved it may have died between the next step's submit and this job's cancel, and
    the job been leased since: a move once begun goes on, so one run does the task."""
    if state == JobState.CANCELLED:
        return True
    waited = now - step_meta.submitted_at
    known = state is not None and state != JobState.UNKNOWN
    return known and report_after is not None and waited >= report_after


def queued_moving_message(steps: Sequence[Step], current: Step, report: QueuedReport) -> str:
    """What the poll that moves a queued job says: the next step's job is submitted, then this one cancelled."""
    after = steps[current.index + 1].architecture
    return (
        f"moving from {current.architecture} to {after} at once: {report.message}; its {after} job is submitted, "
        f"then its {current.architecture} job cancelled"
    )


def gang_moving_message(steps: Sequence[Step], current: Step, move: Move) -> str:
    """What the poll that cancels a member says: it moves on with its gang once Armada confirms the cancel."""
    after = steps[current.index + 1].architecture
    return (
        f"moving from {current.architecture} to {after} with its gang: {why(move, current.architecture, 0)}; "
        f"its job is cancelled, then submitted for {after}"
    )


def gang_waiting_message(steps: Sequence[Step], current: Step, wait: GangWait) -> str:
    """What a member says while its gang's members still in flight end before it moves on."""
    after = steps[current.index + 1].architecture
    members = ", ".join(wait.in_flight)
    return (
        f"moving from {current.architecture} to {after} with its gang: {why(wait.move, current.architecture, 0)}; "
        f"waiting for the gang's jobs still in flight to end ({members}: cancelled for the move), so the "
        f"{after} gang counts only the members that did not succeed on {current.architecture}"
    )


def _cause(line: str) -> str:
    """The line without the frame of Armada's failure reason ("Container X failed with exit code N because ...",
    v0.22.7 internal/executor/util/pod_status.go), which says nothing of the architecture."""
    framed = _FRAME.match(line)
    return line[framed.end() :] if framed else line


def _rejection_gist(reason: str, own_group: str) -> str:
    """What the rejection says of the step's own node group (`2 nodes: pod requires 2 cpu, but only 1 is
    available`), or that the group has no node (every node excluded is another group's); else its first line
    about a gang, shortened."""
    excluded = excluded_nodes(reason)
    mine = [x for x in excluded if not x.node_groups or own_group in x.node_groups]
    if mine:
        return "; ".join(f"{x.count} node{'s' if x.count != 1 else ''}: {x.reason}" for x in mine)[:MAX_EVIDENCE]
    if excluded:
        return f"no node of group {own_group}" if own_group else "no node can hold it"
    lines = [line.strip() for line in reason.splitlines() if _FITS_NO_NODE.search(line)]
    return (lines[0] if lines else reason.strip())[:MAX_EVIDENCE]


def why(move: Move, before: str, spill_after: float) -> str:
    """Why the task left the step's architecture, in a few words (`custom_info`'s `why`)."""
    if move.kind == SPILLED:
        return f"no {before} node had room after {spill_after:g} s queued"
    if move.kind == REJECTED:
        return f"Armada rejected the {before} job: no {before} node can ever hold it ({move.evidence})"
    if move.kind == NO_NODE:
        return f"Armada's scheduler had no {before} node left for the queued {before} job"
    return f"the image cannot run on {before} ({move.evidence})"


def moved_message(steps: Sequence[Step], current: Step, move: Optional[Move], spill_after: float) -> str:
    """`moved from arm64 to amd64 at once: Armada rejected the arm64 job: ...` (empty on the first step)."""
    if not current.index or move is None:
        return ""
    before = steps[current.index - 1].architecture
    if move.kind == SPILLED:
        return (
            f"spilled from {before} to {current.architecture} after {spill_after:g} s queued: no {before} node had room"
        )
    return f"moved from {before} to {current.architecture} at once: {why(move, before, spill_after)}{_gang_left(move)}"


def _gang_left(move: Move) -> str:
    """What became of the gang's members that had succeeded before the move (empty: none had)."""
    if not move.gang_done:
        return ""
    done = ", ".join(move.gang_done)
    had = "has" if len(move.gang_done) == 1 else "have"
    return (
        f"; the gang moved on as {move.gang_size} member{'s' if move.gang_size != 1 else ''}: "
        f"{done} {had} already succeeded and stay{'s' if len(move.gang_done) == 1 else ''} done"
    )


def move_info(steps: Sequence[Step], current: Step, move: Optional[Move], spill_after: float) -> dict[str, Any]:
    """The `custom_info` entries of a move into the current step: where from and why (a spill also keeps
    `spilled_from`, as before)."""
    if not current.index or move is None:
        return {}
    before = steps[current.index - 1].architecture
    info: dict[str, Any] = {"moved_from": before, "why": why(move, before, spill_after), "moved_by": move.kind}
    if move.gang_size:
        info["gang_cardinality"] = move.gang_size
        info["gang_members_done"] = list(move.gang_done)
    if move.kind == SPILLED:
        info["spilled_from"] = before
    return info
