"""The view's HTML: pure functions from the gathered data to a page, no script, one small stylesheet.

Every value from Armada is escaped. The overview has the queues and job sets, a timeline per run
with one lane per node (bars coloured by the node's architecture, so a multi-architecture run reads
at a glance; a failed task's bar marked, a spilled task's bar linked to the job it replaced) and the
jobs table, whose badge is the task's outcome where known, with Armada's state beside it; a job's page
has its summary, why it is queued, its log and its pod spec. Errors wrap, and long ones expand. Rows and
lanes carry `data-*` attributes, so tests (and scripts) can read them.
"""

from __future__ import annotations

import html
import time
from typing import Iterable, Optional
from urllib.parse import quote

import yaml

from armada_flyte.view.jobs import Bar, JobRow, Lane, RunTimeline, Timeline
from armada_flyte.view.snapshot import JobPage, Overview

ARCHITECTURE_COLOURS = {"amd64": "#1d4ed8", "arm64": "#ea580c"}
"""Bar colour per node architecture; any other (or unknown) is `OTHER_COLOUR`."""
OTHER_COLOUR = "#6b7280"
STATE_COLOURS = {
    "SUCCEEDED": "#15803d",
    "FAILED": "#b91c1c",
    "REJECTED": "#b91c1c",
    "PREEMPTED": "#b91c1c",
    "CANCELLED": "#78716c",
    "RUNNING": "#0e7490",
    "PENDING": "#0e7490",
    "LEASED": "#0e7490",
    "QUEUED": "#a16207",
}
"""The state badge's colour per Armada state (or the task's outcome, by its first word); others take
`OTHER_COLOUR`."""
FAILED_MARK = "#7f1d1d"
"""The outline of a failed task's bar (darker than the FAILED badge, so the two are told apart)."""
SHORT_ERROR = 120
"""Characters of an error shown whole in the table; a longer (or multi-line) one expands."""
REFRESH_SECONDS = 5

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:16px 24px;color:#111827;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:20px 0 8px}
.muted{color:#6b7280}.problem{color:#b91c1c}
a{color:#1e40af;text-decoration:none}
table{border-collapse:collapse}th,td{text-align:left;padding:3px 10px 3px 0;white-space:nowrap;vertical-align:top}
td.error{white-space:normal;overflow-wrap:anywhere;max-width:0;padding-bottom:6px}
td.error pre{white-space:pre-wrap;max-height:240px}
.armada-state{font-size:11px;color:#6b7280;margin-left:4px}
td.state-cell{white-space:normal;min-width:150px;max-width:240px}.spill{display:block;font-size:12px}
.bar.failed{box-shadow:inset 0 0 0 2px FAILED_MARK}
.bar.spilled{border-left:3px dashed #fff}
h3.run{font-size:14px;margin:12px 0 4px}
th{font-weight:600;border-bottom:1px solid #d1d5db}
tr.job td{border-bottom:1px solid #f3f4f6}
td.job-set{max-width:160px;overflow:hidden;text-overflow:ellipsis}
.state{display:inline-block;padding:1px 8px;border-radius:9px;color:#fff;font-size:12px;font-weight:600}
.lanes{border:1px solid #e5e7eb;max-width:1100px}
.lane{display:flex;align-items:center;border-bottom:1px solid #e5e7eb;padding:4px 0}
.lane:last-child{border-bottom:0}
.lane-name{width:240px;flex:none;padding:0 8px;font-size:12px;overflow:hidden;white-space:nowrap}
.track{position:relative;flex:1;background:#f9fafb}
.bar{position:absolute;height:18px;min-width:10px;border-radius:3px;color:#fff;font-size:11px;line-height:18px}
.bar span{display:block;overflow:hidden;white-space:nowrap;margin:0 4px}
.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-1px;margin:0 4px 0 10px}
pre.log{white-space:pre-wrap}
pre{background:#f9fafb;border:1px solid #e5e7eb;padding:8px;overflow:auto;max-height:480px;font-size:12px}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 16px}dt{font-weight:600}dd{margin:0}
""".replace("FAILED_MARK", FAILED_MARK)


def overview_html(overview: Overview) -> str:
    """The main page: queues and job sets, the timeline per node, the jobs."""
    body = [
        "<h1>armada-flyte view</h1>",
        f'<div class="muted">Armada at {_e(overview.armada_url)} · read {_clock(overview.taken_at)} UTC · '
        f"refreshes every {REFRESH_SECONDS} s</div>",
        _problems(overview.problems),
        "<h2>Queues and job sets</h2>",
        f'<div class="muted following">following {_e(overview.following)}</div>' if overview.following else "",
        _queues(overview),
        "<h2>Timeline: one per run, the latest first; one lane per node</h2>",
        _timelines(overview.timelines),
        f"<h2>Jobs ({len(overview.rows)}{_left_out(overview)})</h2>",
        _jobs_table(overview.rows),
    ]
    return _page("armada-flyte view", body, refresh=True)


def job_html(page: JobPage) -> str:
    """A job's page: what the table says, why it is queued, its log and its pod spec."""
    body = [
        '<div><a href="/">&larr; all jobs</a></div>',
        f"<h1>Job {_e(page.job_id)}</h1>",
        f'<div class="muted">Armada at {_e(page.armada_url)}</div>',
        _problems(page.problems),
    ]
    row = page.row
    if row is not None:
        body.append(_summary(row))
        if row.state == "QUEUED":
            body.append("<h2>Why it is queued</h2>")
            reason = page.queued_reason or "the scheduler's report, as Armada gave it:"
            body.append(f'<p class="queued-reason">{_e(reason)}</p>')
            if page.scheduling_report:
                body.append(f'<pre class="scheduling-report">{_e(page.scheduling_report)}</pre>')
        body.append("<h2>Log</h2>")
        lines = "\n".join(page.log) if page.log else ("(no lines yet)" if row.node else "(not placed on a node yet)")
        body.append(f'<pre class="log">{_e(lines)}</pre>')
        body.append("<h2>Pod spec</h2>")
        spec = yaml.safe_dump(page.pod_spec, sort_keys=False) if page.pod_spec else "(none in the job's details)"
        body.append(f'<pre class="pod-spec">{_e(spec)}</pre>')
    return _page(f"job {page.job_id}", body, refresh=False)


def _page(title: str, body: Iterable[str], *, refresh: bool) -> str:
    meta = f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">' if refresh else ""
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">{meta}<title>{_e(title)}</title>'
        f"<style>{_STYLE}</style></head><body>{''.join(body)}</body></html>"
    )


def _queues(overview: Overview) -> str:
    if not overview.queues:
        return '<p class="muted">No queues.</p>'
    by_queue: dict[str, list[str]] = {}
    for summary in overview.job_sets:
        counts = ", ".join(f"{n} {state.lower()}" for state, n in summary.states.items()) or "no jobs"
        by_queue.setdefault(summary.queue, []).append(
            f'<li class="job-set" data-queue="{_e(summary.queue)}" data-job-set="{_e(summary.job_set)}">'
            f'{_e(summary.job_set)} <span class="muted">({_e(counts)})</span></li>'
        )
    items = []
    for queue in overview.queues:
        sets = by_queue.get(queue, [])
        inner = f"<ul>{''.join(sets)}</ul>" if sets else ' <span class="muted">(no job sets followed)</span>'
        items.append(f'<li class="queue" data-queue="{_e(queue)}"><b>{_e(queue)}</b>{inner}</li>')
    return f"<ul>{''.join(items)}</ul>"


def _timelines(runs: list[RunTimeline]) -> str:
    if not any(run.timeline.lanes for run in runs):
        return '<p class="muted">No job has been placed on a node yet.</p>'
    parts = []
    for run in runs:
        sets = _e(", ".join(run.job_sets))
        title = f'run {_e(run.run)} <span class="muted">(job sets {sets})</span>' if run.run else f"job set {sets}"
        parts.append(
            f'<section class="run-timeline" data-run="{_e(run.run)}" data-job-sets="{sets}">'
            f'<h3 class="run">{title}</h3>{_timeline(run.timeline)}</section>'
        )
    return "".join(parts)


def _timeline(line: Timeline) -> str:
    if not line.lanes:
        return '<p class="muted">No job has been placed on a node yet.</p>'
    legend = "".join(
        f'<span class="swatch" style="background:{colour}"></span>{_e(arch)}'
        for arch, colour in [*ARCHITECTURE_COLOURS.items(), ("other", OTHER_COLOUR)]
    )
    span = f"{_clock(line.begin)} to {_clock(line.end)} UTC ({line.end - line.begin:.1f} s)"
    lanes = "".join(_lane(lane) for lane in line.lanes)
    return f'<div class="muted">{span} ·{legend}</div><div class="lanes">{lanes}</div>'


def _lane(lane: Lane) -> str:
    colour = architecture_colour(lane.architecture)
    bars = "".join(_bar(bar) for bar in lane.bars)
    about = " · ".join(part for part in (lane.node_group and f"group {lane.node_group}", lane.architecture) if part)
    return (
        f'<div class="lane" data-node="{_e(lane.node)}" data-architecture="{_e(lane.architecture)}" '
        f'data-colour="{colour}"><div class="lane-name"><b>{_e(lane.node)}</b> '
        f'<span class="muted">{_e(about)}</span></div>'
        f'<div class="track" style="height:{lane.slots * _SLOT + 2}px">{bars}</div></div>'
    )


_SLOT = 22
"""Pixels per row of a lane (a bar is 18)."""


def _bar(bar: Bar) -> str:
    classes = "bar" + (" failed" if bar.failed else "") + (" spilled" if bar.spilled_from else "")
    label = ("✕ " if bar.failed else "") + ("↪ " if bar.spilled_from else "") + bar.label
    title = f"{bar.label}: {bar.state}"
    if bar.spilled_from:
        title += f"; took the place of job {bar.spilled_from} ({bar.moved_how or 'spilled'})"
    return (
        f'<a class="{classes}" href="/jobs/{quote(bar.job_id)}" data-job-id="{_e(bar.job_id)}" '
        f'data-failed="{str(bar.failed).lower()}" data-spilled-from="{_e(bar.spilled_from)}" title="{_e(title)}" '
        f'style="left:{bar.start * 100:.2f}%;width:{max(bar.end - bar.start, 0) * 100:.2f}%;'
        f"top:{bar.slot * _SLOT + 2}px;"
        f'background:{architecture_colour(bar.architecture)}"><span>{_e(label)}</span></a>'
    )


_COLUMNS = ("task", "architecture", "from", "node group", "node", "state", "submitted", "started", "ended", "seconds")
_STATE = _COLUMNS.index("state")


def _jobs_table(rows: list[JobRow]) -> str:
    """One row per job; a job's error on a row of its own below it, as wide as the table, so it is never cut
    off at the window's edge."""
    if not rows:
        return '<p class="muted">No jobs in the job sets followed.</p>'
    head = "".join(f"<th>{c}</th>" for c in (*_COLUMNS, "job", "job set"))
    return f'<table class="jobs"><tr>{head}</tr>{"".join(_job_row(row) for row in rows)}</table>'


def _job_row(row: JobRow) -> str:
    seconds = row.seconds
    cells = (
        _e(row.task or "-"),
        _e(row.architecture or "-"),
        _e(row.source or "-"),
        _e(row.node_group or "-"),
        _e(row.node or "-"),
        _state_cell(row),
        _clock(row.submitted_at),
        _clock(row.started_at),
        _clock(row.finished_at),
        f"{seconds:.2f}" if seconds is not None else "-",
        f'<a href="/jobs/{quote(row.job_id)}">{_e(row.job_id)}</a>',
    )
    job = (
        f'<tr class="job" data-job-id="{_e(row.job_id)}" data-state="{_e(row.state)}" '
        f'data-outcome="{_e(row.shown_state)}" data-architecture="{_e(row.architecture)}" data-node="{_e(row.node)}" '
        f'data-spilled-to="{_e(row.spilled_to)}" data-spilled-from="{_e(row.spilled_from)}">'
        + "".join(
            f'<td class="state-cell">{cell}</td>' if i == _STATE else f"<td>{cell}</td>" for i, cell in enumerate(cells)
        )
        + f'<td class="job-set" title="{_e(row.job_set)}">{_e(row.job_set)}</td></tr>'
    )
    error = row.task_error or row.error
    if not error.strip():
        return job
    return (
        f'{job}<tr class="job-error" data-job-id="{_e(row.job_id)}"><td></td>'
        f'<td class="error" colspan="{len(_COLUMNS) + 1}">{_error(error)}</td></tr>'
    )


def _cell(content: str, state: bool = False) -> str:
    return f'<td class="state-cell">{content}</td>' if state else f"<td>{content}</td>"


def _state_cell(row: JobRow) -> str:
    """The task's outcome (else Armada's state), Armada's beside it where it differs, and a spill's link."""
    cell = _state(row.shown_state)
    if row.outcome and row.outcome != row.state:
        cell += f'<span class="armada-state">Armada: {_e(row.state)}</span>'
    if row.spilled_to:
        link = f'<a href="/jobs/{quote(row.spilled_to)}">{_e(row.spilled_to)}</a>'
        said = "spilled: moved to" if row.spilled else "moved at once to"
        cell += f'<span class="spill">{said} {link}</span>'
    if row.spilled_from:
        cell += (
            f'<span class="spill">took the place of <a href="/jobs/{quote(row.spilled_from)}">'
            f"{_e(row.spilled_from)}</a> ({_e(row.moved_how or 'spilled')})</span>"
        )
    return cell


def _error(text: str) -> str:
    """An error whole when short, else its first line that expands to the whole text."""
    text = text.strip()
    if not text:
        return "-"
    first = _first_line(text)
    if first == text and len(text) <= SHORT_ERROR:
        return f'<span class="problem">{_e(text)}</span>'
    summary = first if len(first) <= SHORT_ERROR else first[: SHORT_ERROR - 3] + "..."
    return f'<details class="problem"><summary>{_e(summary)}</summary><pre>{_e(text)}</pre></details>'


def _summary(row: JobRow) -> str:
    fields = (
        ("state", _state_cell(row)),
        ("queue", _e(row.queue)),
        ("job set", _e(row.job_set)),
        ("namespace", _e(row.namespace)),
        ("task", _e(row.task or "-")),
        ("architecture", _e(row.architecture or "-")),
        ("from", _e(row.source or "-")),
        ("node group", _e(row.node_group or "-")),
        ("node", _e(row.node or "-")),
        ("cluster", _e(row.cluster or "-")),
        ("submitted", _clock(row.submitted_at)),
        ("started", _clock(row.started_at)),
        ("ended", _clock(row.finished_at)),
        ("task's error", f'<pre class="problem">{_e(row.task_error)}</pre>' if row.task_error else "-"),
        ("Armada's error", f'<pre class="problem">{_e(row.error)}</pre>' if row.error else "-"),
    )
    return '<dl class="summary">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in fields) + "</dl>"


def _state(state: str) -> str:
    colour = STATE_COLOURS.get(state.split(" ", 1)[0], OTHER_COLOUR)
    return f'<span class="state" style="background:{colour}">{_e(state)}</span>'


def architecture_colour(architecture: str) -> str:
    """The colour of a bar or lane for a node of `architecture`."""
    return ARCHITECTURE_COLOURS.get(architecture, OTHER_COLOUR)


def _problems(problems: list[str]) -> str:
    return "".join(f'<p class="problem">{_e(p)}</p>' for p in problems)


def _left_out(overview: Overview) -> str:
    left = overview.jobs_total - len(overview.rows)
    return f", the newest of {overview.jobs_total}" if left > 0 else ""


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _clock(seconds: Optional[float]) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(seconds)) if seconds else "-"


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)
