"""What one page shows, gathered from Armada: the reads, in the order the page needs them.

A read that fails does not fail the page: its text is listed under `problems` and the rest is
shown. Job sets can't be listed through Armada's gRPC API (Lookout's own database answers that),
so the view follows the job sets it is given: named ones, and those a `JobSetSource` finds.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, TypeVar

from armada_flyte.armada_names import JobState
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.poll.queued_report import gist
from armada_flyte.errors import ArmadaFlyteError
from armada_flyte.view.armada_reader import ArmadaReader
from armada_flyte.view.jobs import (
    NOT_KNOWN,
    JobRow,
    NodeGroupOf,
    RunTimeline,
    job_row,
    link_spills,
    no_node_groups,
    pod_spec_of,
    run_timelines,
)
from armada_flyte.view.task_errors import TaskErrors

T = TypeVar("T")

JobSetSource = Callable[[], Iterable[tuple[str, str]]]
"""(queue, job set) pairs to follow, asked again at each page load."""

PREFERENCE_JOB_SET = "-prefer-"
"""In the job set of a task with an architecture preference (`<job set>-prefer-<hash>`, connector/preference.py)."""

MAX_JOBS_SHOWN = 500
"""The newest jobs the overview lists (one GetJobDetails call); the page says how many it left out."""


@dataclass(frozen=True)
class JobSetSummary:
    queue: str
    job_set: str
    states: dict[str, int]
    """Jobs per Armada state."""


@dataclass(frozen=True)
class Overview:
    armada_url: str
    taken_at: float
    queues: list[str]
    job_sets: list[JobSetSummary]
    rows: list[JobRow]
    timelines: list[RunTimeline]
    """One per Flyte run (else per job set), the latest first."""
    jobs_total: int
    problems: list[str] = field(default_factory=list)
    following: str = ""
    """Which job sets the page follows, and why those (Armada's API can't list them)."""


@dataclass(frozen=True)
class JobPage:
    armada_url: str
    job_id: str
    row: Optional[JobRow]
    pod_spec: Optional[dict]
    log: list[str]
    queued_reason: str
    """For a queued job: the scheduler's reports said in a line (`connector.queued_report.gist`)."""
    scheduling_report: str
    problems: list[str] = field(default_factory=list)


def node_group_finder(node_groups: Optional[NodeGroups]) -> NodeGroupOf:
    """(group, architecture) of a node from its name, through the node-group file (see `connector.landing`)."""
    if node_groups is None:
        return no_node_groups

    def find(node: str) -> tuple[str, str]:
        architecture = node_groups.architecture_of_node(node, list(node_groups.architectures))
        if architecture is None:
            return "", ""
        return node_groups.architectures[architecture].node_group, architecture.value

    return find


class Gatherer:
    """Builds the pages' data from one reader, the job sets to follow and the node groups (if known)."""

    def __init__(
        self,
        reader: ArmadaReader,
        job_sets: JobSetSource,
        node_groups: Optional[NodeGroups] = None,
        queues: Iterable[str] = (),
        source: str = "",
        task_errors: Optional[TaskErrors] = None,
    ):
        self._reader = reader
        self._task_errors = task_errors
        self._job_sets = job_sets
        self._source = source
        """Where the job sets given come from, for the page (e.g. "given with --job-set")."""
        self._node_groups = node_groups
        self._named_queues = list(queues)
        self._node_group_of = node_group_finder(node_groups)

    def overview(self) -> Overview:
        problems = [text] if (text := self._reader.not_serving()) else []
        queues = set(self._named_queues)
        try:
            queues |= set(self._reader.queues())
        except ArmadaFlyteError as exc:
            problems.append(str(exc))
        followed, following = self._followed()
        ids_by_set: dict[tuple[str, str], list[str]] = {}
        for queue, job_set in followed:
            queues.add(queue)
            try:
                ids_by_set[(queue, job_set)] = self._reader.job_ids(queue, job_set)
            except ArmadaFlyteError as exc:
                problems.append(f"job set {job_set} of queue {queue}: {exc}")
        all_ids = [job_id for ids in ids_by_set.values() for job_id in ids]
        shown_ids = sorted(set(all_ids), reverse=True)[:MAX_JOBS_SHOWN]  # ULIDs: newest first
        rows = self._rows(shown_ids, problems)
        taken_at = time.time()
        summaries = []
        for queue, job_set in ids_by_set:
            of_set = [row for row in rows if row.queue == queue and row.job_set == job_set]
            states = Counter(row.shown_state.split(" ", 1)[0] for row in of_set)
            summaries.append(JobSetSummary(queue, job_set, dict(sorted(states.items()))))
        return Overview(
            self._reader.url,
            taken_at,
            sorted(queues),
            summaries,
            rows,
            run_timelines(rows, taken_at),
            len(set(all_ids)),
            problems,
            following,
        )

    def _followed(self) -> tuple[list[tuple[str, str]], str]:
        """The job sets to read, and the page's line about them: every one the Armada holds when it can list
        them (the embedded server), else those given."""
        given = set(self._job_sets())
        try:
            listed = self._reader.listed_job_sets()
        except ArmadaFlyteError:  # the other reads say what is wrong
            listed = None
        if listed is not None:
            every = given | {(s.queue, s.job_set) for s in listed}
            return sorted(every), f"every job set this Armada holds ({len(every)})"
        source = f" {self._source}" if self._source else ""
        return sorted(given), (
            f"{len(given)} job set(s){source}: this Armada's gRPC API cannot list job sets, so the view follows "
            "those it is given"
        )

    def _rows(self, job_ids: list[str], problems: list[str]) -> list[JobRow]:
        try:
            details = self._reader.details(job_ids)
        except ArmadaFlyteError as exc:
            problems.append(str(exc))
            return []
        failed = [i for i, d in details.items() if d.state in (JobState.FAILED, JobState.REJECTED)]
        errors: dict[str, str] = {}
        if failed:
            try:
                errors = self._reader.errors(failed)
            except ArmadaFlyteError as exc:
                problems.append(str(exc))
        known = self._known_outcomes(details, problems)
        rows = [
            job_row(details[i], errors.get(i, ""), self._node_group_of, known.get(i, NOT_KNOWN))
            for i in job_ids
            if i in details
        ]
        return link_spills(sorted(rows, key=lambda r: (r.submitted_at, r.job_id)))

    def _known_outcomes(self, details: dict, problems: list[str]) -> dict:
        """What a0 recorded for the jobs Armada says SUCCEEDED, where the view can read it."""
        if self._task_errors is None:
            return {}
        try:
            return self._task_errors.of(details)
        except Exception as exc:  # the page goes on with Armada's states
            problems.append(f"could not read the tasks' outcomes from the blob store: {exc}")
            return {}

    def job_page(self, job_id: str) -> JobPage:
        problems: list[str] = []
        try:
            details = self._reader.details([job_id]).get(job_id)
        except ArmadaFlyteError as exc:
            return JobPage(self._reader.url, job_id, None, None, [], "", "", [str(exc)])
        if details is None:
            return JobPage(self._reader.url, job_id, None, None, [], "", "", [f"Armada does not know job {job_id}"])
        errors = {}
        if details.state in (JobState.FAILED, JobState.REJECTED):
            errors = self._read(problems, lambda: self._reader.errors([job_id]), {})
        known = self._known_outcomes({job_id: details}, problems)
        row = job_row(details, errors.get(job_id, ""), self._node_group_of, known.get(job_id, NOT_KNOWN))
        if PREFERENCE_JOB_SET in details.jobset:  # a preference task's steps: link a spill to its successor
            steps = self._read(problems, lambda: self._reader.job_ids(details.queue, details.jobset), [])
            row = next((r for r in self._rows(steps, problems) if r.job_id == job_id), row)
        log = self._read(problems, lambda: self._reader.log(job_id, details.namespace), []) if row.node else []
        reason = report = ""
        if details.state == JobState.QUEUED:
            report = self._read(problems, lambda: self._reader.job_report(job_id), "")
            queue_report = self._read(problems, lambda: self._reader.queue_report(details.queue), "")
            if report and self._node_groups is not None:
                reason = gist(report, queue_report, details.queue, row.node_group, self._node_groups).message
        return JobPage(self._reader.url, job_id, row, pod_spec_of(details.job_spec), log, reason, report, problems)

    @staticmethod
    def _read(problems: list[str], read: Callable[[], T], fallback: T) -> T:
        try:
            return read()
        except ArmadaFlyteError as exc:
            problems.append(str(exc))
            return fallback
