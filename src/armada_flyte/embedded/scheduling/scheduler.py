"""Placing queued jobs on nodes, the way Armada's scheduler decides.

Queues share the cluster fairly: the queue using the smallest share of the cluster (its
dominant resource, scaled by its priority factor) places its next job first. Within a queue,
a lower priority number goes first, then submit order. A gang is placed whole or not at all,
all members on nodes that share one value of its node-uniformity label.

Pods with equal requirements are interchangeable, so what is learnt about one (which nodes
suit it, that no node has room for it until something ends) is reused for the rest. That is
what keeps a pass over thousands of jobs short.
"""

from __future__ import annotations

import heapq
import math
from typing import Callable, Mapping, Optional

from armada_flyte.cluster.cluster_file import Cluster
from armada_flyte.embedded.model.requirements import Requirements
from armada_flyte.embedded.model.resources import add, fits, subtract
from armada_flyte.embedded.scheduling.gang_fit import GangFit, Verdict, fit_gang
from armada_flyte.embedded.scheduling.matching import rejection_report, static_mismatch
from armada_flyte.embedded.store.jobs import Job

NodeChoice = tuple[Job, int]
"""A job and the index of the node it goes to."""


GroupKey = object
"""Jobs that are interchangeable for placement: equal requirements, or one gang's members."""


class _Group:
    """One group's waiting jobs in Armada's order (sorted and compacted lazily)."""

    __slots__ = ("jobs", "needs_sort", "needs_compact")

    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.needs_sort = False
        self.needs_compact = False

    def compact(self, waiting: Mapping[str, Job]) -> None:
        self.jobs = [job for job in self.jobs if job.id in waiting]
        self.needs_compact = False


class Backlog:
    """One queue's waiting jobs, in Armada's order (lower priority number first, then submit order),
    kept in groups of interchangeable jobs so a pass can skip a whole group at once."""

    def __init__(self) -> None:
        self._waiting: dict[str, Job] = {}
        self._groups: dict[GroupKey, _Group] = {}

    def add(self, job: Job) -> None:
        group = self._groups.get(key := _group_key(job))
        if group is None:
            group = self._groups[key] = _Group()
        if group.needs_compact:  # a job requeued (a returned lease) must not keep its old place too
            group.compact(self._waiting)
        if group.jobs and _rank(job) < _rank(group.jobs[-1]):
            group.needs_sort = True
        self._waiting[job.id] = job
        group.jobs.append(job)

    def discard(self, job: Job) -> None:
        if self._waiting.pop(job.id, None) is not None:
            self._groups[_group_key(job)].needs_compact = True

    def resort(self) -> None:
        """Call after a waiting job's priority changed."""
        for group in self._groups.values():
            group.needs_sort = True

    def __len__(self) -> int:
        return len(self._waiting)

    def groups(self) -> list[list[Job]]:
        """Each group's waiting jobs, in order (groups left empty are dropped)."""
        found = []
        for key in list(self._groups):
            group = self._groups[key]
            if group.needs_compact:
                group.compact(self._waiting)
            if not group.jobs:
                del self._groups[key]
                continue
            if group.needs_sort:
                group.jobs.sort(key=_rank)
                group.needs_sort = False
            found.append(group.jobs)
        return found

    def ordered(self) -> list[Job]:
        """Every waiting job in Armada's order."""
        return sorted((job for jobs in self.groups() for job in jobs), key=_rank)


def _group_key(job: Job) -> GroupKey:
    return job.gang_key if job.gang_key is not None else job.requirements


def _rank(job: Job) -> tuple[float, int]:
    return (job.priority, job.seq)


class _QueueWalk:
    """A queue's waiting jobs in Armada's order, one group head at a time: a head that can't be placed
    now takes its whole group out of this pass (the rest are interchangeable with it, and capacity only
    shrinks during a pass)."""

    def __init__(self, groups: list[list[Job]]):
        self._heads = [(_rank(jobs[0]), i, 0, jobs) for i, jobs in enumerate(groups)]
        heapq.heapify(self._heads)

    def place_next(self, place: Callable[[Job], Optional[list[NodeChoice]]]) -> Optional[list[NodeChoice]]:
        """Placements for the first job (in order) that fits, or None when none does."""
        while self._heads:
            _, i, position, jobs = heapq.heappop(self._heads)
            placed = place(jobs[position])
            if placed:
                if position + 1 < len(jobs):
                    heapq.heappush(self._heads, (_rank(jobs[position + 1]), i, position + 1, jobs))
                return placed
        return None


class Scheduler:
    """Free capacity per node and per-queue usage, and the placement decisions made from them."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.free: list[dict[str, int]] = [dict(node.allocatable) for node in cluster.nodes]
        self.usage: dict[str, dict[str, int]] = {}
        self._suitable: dict[Requirements, list[int]] = {}
        self._suitable_sets: dict[Requirements, frozenset[int]] = {}
        self._gangs_not_fitting: set[tuple[str, ...]] = set()
        self._not_fitting_since = 0
        self._verdicts: dict[Requirements, Optional[str]] = {}
        self._full_at: dict[Requirements, int] = {}
        self._releases = 0

    def suitable_nodes(self, needs: Requirements) -> list[int]:
        """Indices of the nodes that could take the pod when empty."""
        nodes = self._suitable.get(needs)
        if nodes is None:
            nodes = [n.index for n in self.cluster.nodes if static_mismatch(n, needs) is None]
            self._suitable[needs] = nodes
        return nodes

    def rejection(self, needs: Requirements) -> Optional[str]:
        """Armada's "fits no node" report if no node could ever take the pod, else None."""
        if needs not in self._verdicts:
            self._verdicts[needs] = rejection_report(self.cluster, needs)
        return self._verdicts[needs]

    def gang_rejection(self, members: list[Job]) -> Optional[str]:
        """Why the gang could never be placed, even on an empty cluster, or None."""
        for member in members:
            report = self.rejection(member.requirements)
            if report:
                return report
        gang = members[0].gang
        assert gang is not None
        label = gang.uniformity_label
        if label and not any(label in node.labels for node in self.cluster.nodes):
            return self._gang_report(f"gang {gang.id}: no node has the node uniformity label {label}")
        verdicts = [
            self._fit_gang(members, domain, self._allocatable).verdict for domain in self._uniform_domains(members[0])
        ]
        if all(verdict == Verdict.NEVER for verdict in verdicts):
            where = f" on nodes sharing one value of {label}" if label else ""
            return self._gang_report(
                f"gang {gang.id} of {gang.cardinality} jobs does not fit{where}, even on an empty cluster"
            )
        return None  # it fits, or might: only a gang that provably never fits is rejected

    def reserve(self, job: Job, node: int) -> None:
        subtract(self.free[node], job.requirements.resources)
        add(self.usage.setdefault(job.queue, {}), job.requirements.resources)

    def release(self, job: Job, node: int) -> None:
        add(self.free[node], job.requirements.resources)
        subtract(self.usage.setdefault(job.queue, {}), job.requirements.resources)
        self._releases += 1

    def plan(
        self,
        backlogs: Mapping[str, Backlog],
        priority_factors: Mapping[str, float],
        gang_of: Callable[[Job], Optional[list[Job]]],
    ) -> list[NodeChoice]:
        """Place what fits now, reserving capacity for it; `gang_of` gives a gang's members once all are queued."""
        placements: list[NodeChoice] = []
        cursors: dict[Requirements, int] = {}
        gangs_seen: set[tuple[str, str, str]] = set()
        heap: list[tuple[float, str, _QueueWalk]] = [
            (self._share(queue, priority_factors.get(queue, 1.0)), queue, _QueueWalk(backlog.groups()))
            for queue, backlog in backlogs.items()
            if len(backlog)
        ]
        heapq.heapify(heap)

        def place(job: Job) -> Optional[list[NodeChoice]]:
            return self._place_unit(job, cursors, gangs_seen, gang_of)

        while heap:
            _, queue, walk = heapq.heappop(heap)
            placed = walk.place_next(place)
            if placed:
                for member, node in placed:
                    self.reserve(member, node)
                placements.extend(placed)
                heapq.heappush(heap, (self._share(queue, priority_factors.get(queue, 1.0)), queue, walk))
        return placements

    def _place_unit(
        self,
        job: Job,
        cursors: dict[Requirements, int],
        gangs_seen: set[tuple[str, str, str]],
        gang_of: Callable[[Job], Optional[list[Job]]],
    ) -> Optional[list[NodeChoice]]:
        if job.gang_key is None:
            node = self._place_one(job.requirements, cursors)
            return None if node is None else [(job, node)]
        if job.gang_key in gangs_seen:
            return None
        gangs_seen.add(job.gang_key)
        members = gang_of(job)
        if members is None:
            return None
        return self._place_gang(members)

    def _place_one(self, needs: Requirements, cursors: dict[Requirements, int]) -> Optional[int]:
        if self._full_at.get(needs) == self._releases:
            return None  # nothing has ended since no node had room for these requirements
        nodes = self.suitable_nodes(needs)
        for i in range(cursors.get(needs, 0), len(nodes)):
            if fits(needs.resources, self.free[nodes[i]]):
                cursors[needs] = i
                return nodes[i]
        cursors[needs] = len(nodes)
        self._full_at[needs] = self._releases
        return None

    def _place_gang(self, members: list[Job]) -> Optional[list[NodeChoice]]:
        """Where the whole gang fits in the free capacity now, or None (also while nothing has ended since it
        last didn't)."""
        if self._not_fitting_since != self._releases:
            self._gangs_not_fitting.clear()
            self._not_fitting_since = self._releases
        attempt = tuple(m.id for m in members)
        if attempt in self._gangs_not_fitting:
            return None
        for domain in self._uniform_domains(members[0]):
            fit = self._fit_gang(members, domain, lambda n: self.free[n])
            if fit.nodes is not None:
                return list(zip(members, fit.nodes))
        self._gangs_not_fitting.add(attempt)
        return None

    def _fit_gang(
        self, members: list[Job], domain: Optional[set[int]], capacity: Callable[[int], Mapping[str, int]]
    ) -> GangFit:
        nodes = range(len(self.cluster.nodes)) if domain is None else sorted(domain)
        return fit_gang([m.requirements for m in members], nodes, self._suitable_set, capacity)

    def _allocatable(self, node: int) -> Mapping[str, int]:
        return self.cluster.nodes[node].allocatable

    def _suitable_set(self, needs: Requirements) -> frozenset[int]:
        found = self._suitable_sets.get(needs)
        if found is None:
            found = self._suitable_sets[needs] = frozenset(self.suitable_nodes(needs))
        return found

    def _uniform_domains(self, job: Job) -> list[Optional[set[int]]]:
        """Sets of nodes a gang may spread over: one per value of its uniformity label, or all nodes."""
        label = job.gang.uniformity_label if job.gang else ""
        if not label:
            return [None]
        domains: dict[str, set[int]] = {}
        for node in self.cluster.nodes:
            if label in node.labels:
                domains.setdefault(node.labels[label], set()).add(node.index)
        return [domains[value] for value in sorted(domains)]

    def _share(self, queue: str, priority_factor: float) -> float:
        """The queue's dominant share of the cluster, weighted: a higher priority factor means a smaller share.

        Armada takes a not-a-number or infinite factor (v0.22.7 stores it); a NaN weighs as 1 and an infinite
        one puts the queue behind every queue already using the cluster, so no share becomes NaN and the
        order of the other queues holds."""
        used = self.usage.get(queue, {})
        share = max((used.get(name, 0) / total for name, total in self.cluster.total.items() if total), default=0.0)
        if share == 0.0:
            return 0.0
        return share * (1.0 if math.isnan(priority_factor) else max(priority_factor, 1.0))

    def _gang_report(self, message: str) -> str:
        return "\n".join(
            [
                f"pool {self.cluster.pool}:",
                "Node: none",
                f"Number of nodes in cluster: {len(self.cluster.nodes)}",
                message,
                "---",
            ]
        )
