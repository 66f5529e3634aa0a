"""Why a job waits, or was rejected: Armada's scheduling report, read and turned into fixes.

Armada's scheduler keeps its latest round per pool and answers GetJobReport with free text
(internal/scheduler/reports/server.go): per pool, the job's UnschedulableReason and how many
nodes were excluded for each reason ("Excluded nodes:" then "COUNT: REASON" lines, from
scheduling/context/pod.go; the reasons are nodedb/nodematching.go's). The text is aligned by Go's
tabwriter, so it is read by shape, whatever the spacing. The embedded server prints the same and
names the node groups behind each reason; for a real Armada, taints are matched to the node
groups that declare them.

Reasons that concern the job's own node group are translated into the fix in the admin's
node-group file; reasons from other groups (nodes of another architecture) are expected and
only counted.
"""

from __future__ import annotations

import logging
import re
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Optional

from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.errors import ArmadaFlyteError

log = logging.getLogger(__name__)

MAX_REMEMBERED_JOBS = 10_000
"""Jobs whose last report is kept in the process (least recently asked dropped first)."""

_EXCLUDED_LINE = re.compile(r"^\s*(\d+):\s+(.+?)\s*$")
_GROUPS_NOTE = re.compile(r"\s+\(node groups? ([^()]+)\)$")
_TAINT = re.compile(r"^taint (?P<key>[^=\s]+)=(?P<value>\S*):(?P<effect>\S+) not tolerated$")
_MISSING_LABEL = re.compile(r"label (?P<label>\S+) not set$")
_UNMATCHED_LABEL = re.compile(r"required label (?P<label>\S+) = (?P<wanted>\S+), but node has (?P<found>\S+)$")
_RESOURCES = re.compile(r"^pod requires (?P<required>\S+) (?P<resource>\S+), but only (?P<available>\S+) is available$")
_INSUFFICIENT = "insufficient resources available"
"""Real Armada's reason for nodes excluded for lack of room (v0.22.7 internal/scheduler/nodedb/nodematching.go,
PodRequirementsNotMetReasonInsufficientResources, counted by nodedb.go for nodes its resource index skipped): it
names no resource, unlike the embedded server's "pod requires X, but only Y is available"."""
_QUEUE_LIMIT = re.compile(
    r"requests resources (?P<requested>.+?) which exceeds the total limit of (?P<limit>.+?) "
    r"for its queue/priority class"
)
"""Real Armada's rejection of a job bigger than its queue's limit for its priority class (v0.22.7
internal/scheduler/submitcheck.go); a line of its own in the reason, not an excluded-nodes count."""
_FIELD = re.compile(r"^\s*(?P<name>[A-Za-z][A-Za-z ]*?):\s+(?P<value>\S.*?)\s*$")
_NOT_CONSIDERED = re.compile(r"Most recent scheduling round that affected job \S+: none\s*$", re.MULTILINE)
"""A pool whose latest round did not consider the job (internal/scheduler/reports/server.go): its nodes are not
in the report, so nothing can be said of them."""


@dataclass(frozen=True)
class ExcludedNodes:
    """Nodes the scheduler excluded for one reason, and the node groups they belong to (when known)."""

    count: int
    reason: str
    node_groups: tuple[str, ...] = ()


def excluded_nodes(report: str) -> list[ExcludedNodes]:
    """The "COUNT: REASON" lines under each "Excluded nodes:" of a job report or rejection reason."""
    found: list[ExcludedNodes] = []
    listing = False
    for line in report.splitlines():
        stripped = line.strip()
        if stripped.startswith("Excluded nodes:"):
            listing = stripped == "Excluded nodes:"
            continue
        match = _EXCLUDED_LINE.match(line) if listing else None
        if match is None:
            listing = False
            continue
        reason, groups = match.group(2), ()
        if note := _GROUPS_NOTE.search(reason):
            groups = tuple(g.strip() for g in note.group(1).split(","))
            reason = reason[: note.start()]
        found.append(ExcludedNodes(int(match.group(1)), reason, groups))
    return found


def report_fields(report: str) -> dict[str, list[str]]:
    """Every "Name: value" line of a report, by name (one value per pool that reported it)."""
    fields: dict[str, list[str]] = {}
    for line in report.splitlines():
        if match := _FIELD.match(line):
            fields.setdefault(match.group("name"), []).append(match.group("value"))
    return fields


@dataclass(frozen=True)
class Explanation:
    """One reason, said for a Flyte user, with its fix when the node-group file can provide one."""

    count: int
    reason: str
    node_groups: tuple[str, ...]
    concerns_job: bool
    """False for nodes of other groups than the job's (another architecture): expected, not a problem."""
    says: str
    busy: bool = False
    """Only capacity is missing: the nodes exist, others' pods use them."""

    def as_info(self) -> dict[str, Any]:
        return {"nodes": self.count, "reason": self.reason, "node_groups": list(self.node_groups), "says": self.says}


def explain(excluded: ExcludedNodes, node_groups: NodeGroups, own_group: str, *, rejected: bool) -> Explanation:
    """`excluded` for a user: whose nodes, why, and for the job's own group, what to change and where."""
    groups = excluded.node_groups or _groups_declaring(excluded.reason, node_groups)
    concerns = not own_group or not groups or own_group in groups
    group = own_group or (groups[0] if groups else "")
    nodes = f"{excluded.count} node{'s' if excluded.count != 1 else ''}"
    where = f" of group {', '.join(groups)}" if groups else ""
    origin = node_groups.origin
    if not concerns:
        says = f"{nodes}{where}: {excluded.reason} (expected: the task runs on node group {own_group})"
        return Explanation(excluded.count, excluded.reason, groups, False, says)
    if match := _TAINT.match(excluded.reason):
        taint = f"{match['key']}={match['value']}:{match['effect']}"
        says = (
            f"the {group} group's taint {taint} is not tolerated: add the toleration "
            f"{{key: {match['key']}, operator: Equal, value: {match['value']}, effect: {match['effect']}}} "
            f"to node group {group} in {origin}"
        )
    elif match := _UNMATCHED_LABEL.search(excluded.reason):
        says = (
            f"the {group} group's nodes have {match['label']}={match['found']}, but node group {group} selects "
            f"{match['label']}={match['wanted']}: fix its node_selector in {origin}"
        )
    elif match := _MISSING_LABEL.search(excluded.reason):
        says = (
            f"the {group} group's nodes have no label {match['label']}, which node group {group} selects on: "
            f"fix its node_selector in {origin}"
        )
    elif excluded.reason.startswith("node does not match pod NodeAffinity"):
        says = (
            f"{nodes}{where} don't match the job's required node affinity: check required_node_affinity of node "
            f"group {group} in {origin}, and the task's pod template"
        )
    elif match := _RESOURCES.match(excluded.reason):
        if rejected:
            says = (
                f"the task asks for {match['required']} {match['resource']}, but the nodes{where} have at most "
                f"{match['available']}: lower the task's resources, or ask for bigger nodes"
            )
        else:
            says = (
                f"{nodes}{where} are busy: the task needs {match['required']} {match['resource']}, "
                f"{match['available']} is free"
            )
        return Explanation(excluded.count, excluded.reason, groups, True, says, busy=not rejected)
    elif excluded.reason == _INSUFFICIENT:
        if rejected:
            says = (
                f"the task asks for more resources than the nodes{where} have: lower the task's resources, "
                "or ask for bigger nodes"
            )
        else:
            says = f"{nodes}{where} are busy: not enough of the task's resources is free"
        return Explanation(excluded.count, excluded.reason, groups, True, says, busy=not rejected)
    else:
        says = f"{nodes}{where}: {excluded.reason}"
    return Explanation(excluded.count, excluded.reason, groups, True, says)


def _groups_declaring(reason: str, node_groups: NodeGroups) -> tuple[str, ...]:
    """Node groups of the file whose nodes the reason describes (a real Armada names none): those declaring
    the untolerated taint, or those selecting the label value the excluded nodes have."""
    groups = [group for _, group in sorted(node_groups.architectures.items())]
    if match := _TAINT.match(reason):
        wanted = (match["key"], match["value"], match["effect"])
        return tuple(g.node_group for g in groups if any((t.key, t.value or "", t.effect) == wanted for t in g.taints))
    if match := _UNMATCHED_LABEL.search(reason):
        return tuple(g.node_group for g in groups if g.node_selector.get(match["label"]) == match["found"])
    return ()


def explain_rejection(reason: str, node_groups: NodeGroups, own_group: str) -> str:
    """What to fix for Armada's rejection reason, when it lists excluded nodes or a queue limit (else "")."""
    fixes = [
        e.says
        for e in (explain(x, node_groups, own_group, rejected=True) for x in excluded_nodes(reason))
        if e.concerns_job
    ]
    if match := _QUEUE_LIMIT.search(reason):
        fixes.append(
            f"the task asks for {match['requested']}, more than its queue's limit of {match['limit']} for its "
            "priority class: lower the task's resources, or ask the Armada admin to raise the queue's limit"
        )
    return "; ".join(fixes)


@dataclass(frozen=True)
class QueuedReport:
    """The gist of the scheduler's reports for one queued job, as of `fetched_at`."""

    message: str
    info: dict[str, Any] = field(default_factory=dict)
    fetched_at: float = 0.0
    waits_for_room: bool = False
    """The job's own node group's nodes were excluded only for lack of free resources (they are busy)."""
    no_node_of_group: bool = False
    """The scheduler's latest round (of every pool) excluded every node, and each for being another node group's:
    the job's own group has no node left (they left after the submit check let the job in)."""


class QueuedReports:
    """The last report per job (bounded), asked for again at most every `refresh_seconds`."""

    def __init__(self, capacity: int = MAX_REMEMBERED_JOBS):
        self._capacity = capacity
        self._last: OrderedDict[str, QueuedReport] = OrderedDict()

    def __len__(self) -> int:
        return len(self._last)

    def forget(self, job_id: str) -> None:
        self._last.pop(job_id, None)

    async def report_for(
        self, api: Any, job_id: str, queue: str, own_group: str, node_groups: NodeGroups, refresh_seconds: float
    ) -> QueuedReport:
        """The job's last report if fresh enough, else a new one from Armada (kept for the next polls)."""
        last = self._last.get(job_id)
        if last is not None and time.time() - last.fetched_at < refresh_seconds:
            self._last.move_to_end(job_id)
            return last
        try:
            job_text = await api.job_report(job_id)
            queue_text = await api.queue_report(queue)
        except ArmadaFlyteError as exc:
            if last is None:
                log.warning("job %s: Armada's scheduling report is not available: %s", job_id, exc)
            report = QueuedReport("", {"unavailable": str(exc)}, time.time())
        else:
            report = gist(job_text, queue_text, queue, own_group, node_groups)
            if last is None or last.message != report.message:
                log.info("job %s is queued: %s", job_id, report.message)
        self._last[job_id] = report
        self._last.move_to_end(job_id)
        while len(self._last) > self._capacity:
            self._last.popitem(last=False)
        return report


def gist(job_text: str, queue_text: str, queue: str, own_group: str, node_groups: NodeGroups) -> QueuedReport:
    """A one-line answer to "why is it still queued?" from the job's and its queue's reports."""
    explained = [explain(x, node_groups, own_group, rejected=False) for x in excluded_nodes(job_text)]
    mine = [e for e in explained if e.concerns_job]
    others = sum(e.count for e in explained if not e.concerns_job)
    job_fields, queue_fields = report_fields(job_text), report_fields(queue_text)
    unschedulable = [r for r in job_fields.get("UnschedulableReason", []) if r != "none"]
    standing = _queue_standing(queue, queue_fields)
    if mine:
        message = "; ".join(e.says for e in mine)
        if others:
            message += f" ({others} nodes of other node groups don't suit it, as expected)"
        if all(e.busy for e in mine) and standing:
            message += f"; {standing}"
    elif unschedulable:
        message = f"Armada's scheduler: {', '.join(sorted(set(unschedulable)))}"
    else:
        message = "the scheduler's latest round did not consider it (queues are served by fair share)"
        if standing:
            message += f"; {standing}"
    info = {
        "message": message,
        "unschedulable_reason": unschedulable[0] if unschedulable else "",
        "excluded_nodes": [e.as_info() for e in explained],
        "queue": {
            "name": queue,
            "allocated": (queue_fields.get("Total allocated resources after scheduling") or [""])[0],
            "unschedulable_jobs": _count(queue_fields.get("Number of jobs that could not be scheduled")),
        },
        "fetched_at": time.time(),
    }
    waits_for_room = bool(mine) and all(e.busy for e in mine)
    no_node = own_group != "" and no_node_of_group(job_text, explained)
    if no_node:
        groups = ", ".join(sorted({g for e in explained for g in e.node_groups}))
        message = f"no node of group {own_group} is left: the scheduler's {others} nodes are of group {groups}"
    info["waits_for_room"], info["no_node_of_group"] = waits_for_room, no_node
    return QueuedReport(message, info, info["fetched_at"], waits_for_room, no_node)


def no_node_of_group(job_text: str, explained: list[Explanation]) -> bool:
    """Whether the job report says its own node group has no node: every pool's latest round considered the job,
    excluded every node of the pool, and each excluded node is known to be another group's. Busy nodes (too full,
    or too small: both servers word these alike), cordoned ones (real Armada's unschedulable taint, no group's),
    nodes of unknown groups and pools that did not consider the job all leave it unsaid."""
    if not explained or any(e.concerns_job for e in explained) or _NOT_CONSIDERED.search(job_text):
        return False
    in_pools = sum(int(n) for n in report_fields(job_text).get("Number of nodes in cluster", []) if n.isdigit())
    return in_pools == sum(e.count for e in explained)


def _queue_standing(queue: str, fields: dict[str, list[str]]) -> str:
    held = (fields.get("Total allocated resources after scheduling") or [""])[0]
    waiting = _count(fields.get("Number of jobs that could not be scheduled"))
    if not held and not waiting:
        return ""
    parts = [f"queue {queue} holds {held}" if held else f"queue {queue}"]
    if waiting:
        parts.append(f"{waiting} of its jobs wait for room (Armada shares the cluster between queues by fair share)")
    return ", ".join(parts)


def _count(values: Optional[list[str]]) -> int:
    return sum(int(v) for v in values or () if v.isdigit())
