"""What a local run prints besides the tasks' own output: one name per call, one line per event, one summary.

A fan-out of one task has many calls in flight at once, so each call's lines carry a name of their own
(`[arm.square(x=4)#0 arm64]`: task, its inputs when they are a few short values, else its call index as in
`[arm.train:2#0 arm64]`, attempt, architecture). Flyte's runtime notes go to debug level
(its start and end of every action, and its report of a failure we already printed); a failure prints its
task's traceback (from the pod's log) and then one line here; a spill prints one line when it happens; the
run's job sets and where to see them are named once, after the jobs table or at exit.
"""

from __future__ import annotations

import atexit
import logging
import re
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Optional, TextIO

FLYTE_LOGGER = "flyte"
"""The logger of Flyte's SDK (its runtime and local controller log to it)."""
_RUNTIME_CHATTER = re.compile(r"Flyte runtime (started|completed) for action ")
_RETRYING = re.compile(r"^Task '(?P<task>[^']+)' action '[^']*' failed on attempt \d+/\d+; retrying in ")
"""Flyte's local controller's note before a retry (our failure line already says the task is retried)."""
MAX_REMEMBERED = 10_000


def say(line: str, out: Optional[TextIO] = None) -> None:
    """One line on the console, where the tasks' output goes."""
    out = out or sys.stdout
    print(line, file=out, flush=True)


MAX_INPUTS_SHOWN = 24
"""Characters of `x=4, name='a'` a call's name may show; longer inputs are named by the call's index."""
_SHOWN_TYPES = (bool, int, float, str, type(None))


@dataclass
class CallName:
    """How one call's lines are prefixed: `[arm.square(x=4)#0 arm64]` or `[arm.train:2#0 arm64]`."""

    task: str
    call: str
    """`(x=4)`, or `:2` (the call's index among its task's calls in this process)."""
    attempt: int
    architecture: str

    def __str__(self) -> str:
        where = f" {self.architecture}" if self.architecture else ""
        return f"[{self.task}{self.call}#{self.attempt}{where}]"


def call_label(index: int, inputs: dict[str, object]) -> str:
    """`(x=4)` for a few short plain inputs (what tells a fan-out's calls apart), else `:index`."""
    if all(isinstance(value, _SHOWN_TYPES) for value in inputs.values()):
        text = ", ".join(f"{name}={value!r}" for name, value in inputs.items())
        if len(text) <= MAX_INPUTS_SHOWN:
            return f"({text})"
    return f":{index}"


class CallNumbers:
    """Numbers each call of a task in this process (0, 1, ...), and each attempt of a call: Flyte's local
    controller retries a call by calling the task again with the same output path, and says nothing else."""

    def __init__(self, limit: int = MAX_REMEMBERED):
        self._calls: OrderedDict[str, tuple[int, int]] = OrderedDict()
        """output path -> (call index, attempts started); the oldest are dropped first."""
        self._per_task: dict[str, int] = {}
        self._limit = limit
        self._lock = threading.Lock()

    def next(self, task: str, output_path: str) -> tuple[int, int]:
        """(call index, attempt) for this start of the call whose output goes to `output_path`."""
        with self._lock:
            known = self._calls.get(output_path)
            if known is None:
                call = self._per_task.get(task, 0)
                self._per_task[task] = call + 1
                known = (call, -1)
            numbered = (known[0], known[1] + 1)
            self._calls[output_path] = numbered
            self._calls.move_to_end(output_path)
            while len(self._calls) > self._limit:
                self._calls.popitem(last=False)
            return numbered


_POD_REASON = re.compile(r": Container \S+ failed with exit code \d+ because ")


def headline(message: str) -> str:
    """A failure's message for one console line: its first line, without Armada's per-container reason that
    follows the connector's summary (`...(it used 301Mi): Container x failed with exit code 137 because ...`);
    the view and the job's details keep it whole."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    return _POD_REASON.split(first, maxsplit=1)[0]


class _Reported:
    """Messages of failures this process has printed its line for (Flyte's own reports of them are demoted)."""

    def __init__(self) -> None:
        self._messages: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self.tasks: set[str] = set()
        """Names of the tasks that run through Armada here (their retries' notes are ours to print)."""

    def add(self, message: str) -> None:
        with self._lock:
            self._messages[message] = None
            while len(self._messages) > MAX_REMEMBERED:
                self._messages.popitem(last=False)

    def __contains__(self, message: object) -> bool:
        with self._lock:
            return message in self._messages


reported = _Reported()


class QuietFlyte(logging.Filter):
    """Demotes Flyte's runtime start and end notes, its records of a failure this process already printed (with
    the traceback of our wait, then again for the driver) and its note before retrying a task that runs through
    Armada (our failure line says so) to debug: shown only when Flyte logs at debug."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        message = record.getMessage()
        retrying = _RETRYING.match(message)
        if (
            _RUNTIME_CHATTER.search(message)
            or (error is not None and str(error) in reported)
            or (retrying is not None and retrying["task"] in reported.tasks)
        ):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(FLYTE_LOGGER).isEnabledFor(logging.DEBUG)
        return True


_quiet = QuietFlyte()


def quiet_flyte() -> None:
    """Install `QuietFlyte` on Flyte's logger (once; Flyte's own set-up keeps a logger's filters)."""
    logger = logging.getLogger(FLYTE_LOGGER)
    if _quiet not in logger.filters:
        logger.addFilter(_quiet)


class RunSummary:
    """The job sets this process's runs used, named once in a line that says where to see them."""

    def __init__(self) -> None:
        self._pending: dict[tuple[str, str, str], None] = {}
        """(Armada address, queue, job set) used since the last summary."""
        self._lock = threading.Lock()
        self._registered = False
        self.view_url = ""
        """The local view serving the Armada these runs use (`stack_view` sets it while it serves)."""
        self.in_process = ""
        """The address of an Armada this process runs and keeps nothing of (`local_stack()`'s)."""
        self.find_view: Optional[Callable[[str], str]] = None
        """Asks an Armada for the view serving beside it ("" when none: a real Armada, dev with --no-view)."""

    def used(self, armada_url: str, queue: str, job_set: str) -> None:
        with self._lock:
            self._pending[(armada_url, queue, job_set)] = None
            if not self._registered:
                atexit.register(self.print_pending)
                self._registered = True

    def forget(self) -> None:
        """Drop what is pending (the Armada that held those job sets has stopped, and kept nothing)."""
        with self._lock:
            self._pending.clear()

    def line(self) -> str:
        """The summary of what is pending, and clears it ("" when nothing is)."""
        with self._lock:
            pending, self._pending = list(self._pending), {}
        view_url = self.view_url
        if pending and not view_url and self.find_view is not None and pending[0][0] != self.in_process:
            view_url = self.find_view(pending[0][0])
        return summary_line(pending, view_url, self.in_process)

    def print_pending(self, out: Optional[TextIO] = None) -> None:
        text = self.line()
        if text:
            say(text, out)


def summary_line(job_sets: list[tuple[str, str, str]], view_url: str = "", in_process: str = "") -> str:
    """`Armada job set flyte-r1 (queue flyte, at 127.0.0.1:50051): see it at http://...`: the run's job sets, a
    preference task's own job sets (`<job set>-prefer-<hash>`) counted under the job set they grew from."""
    if not job_sets:
        return ""
    groups: dict[tuple[str, str, str], int] = {}
    for armada, queue, job_set in job_sets:
        base = job_set.split("-prefer-", 1)[0]
        groups[(armada, queue, base)] = groups.get((armada, queue, base), 0) + (base != job_set)
    parts = []
    for (armada, queue, base), preferring in groups.items():
        extra = f" and {preferring} of its preference tasks' job sets ({base}-prefer-*)" if preferring else ""
        parts.append(f"{base}{extra} (queue {queue}, at {armada})")
    (armada, queue, base), *_ = groups
    noun = "job set" if len(parts) == 1 else "job sets"
    if view_url:
        where = f"see the jobs in the view at {view_url}"
    elif armada == in_process:
        where = "the local stack keeps them until it stops (serve the view with `stack_view(stack)`)"
    else:
        where = (
            f"see the jobs in `armada-flyte view --armada {armada} --job-set {queue}/{base}` (or the view "
            f"`armada-flyte dev` serves); a job's log: `armada-flyte logs --armada {armada} JOB_ID`"
        )
    return f"Armada {noun} {'; '.join(parts)}: {where}"


summary = RunSummary()
