"""A connector's view of Armada job states, so a `get` costs no RPC.

Flyte's backend asks for every in-flight task every few seconds, one call each. The view answers
those calls from memory. It follows each job set's event stream (GetJobSetEvents: read to the
end, then watch; after a disconnect it resumes from the last message id). A create doesn't start its job
set's stream at once: the stream starts once no job was submitted to the job set for a refresh period, or
at the first ask about one of its jobs, so a fan-out's creates don't share c0's loop with the messages of
their own jobs' first events, which the stream then reads in one catch-up. For job sets it can't
stream (the stream cap is reached, or the stream broke) and for jobs it hasn't seen, it asks
GetJobStatus in bulk: ids gathered over a short window, in chunks of 500 sent concurrently, and
never one call per job.

In c0 the view runs on c0's server loop (its home loop; in a local run, Flyte's loop): grpcio wakes every
loop that used grpc.aio for every gRPC event, so a loop of its own would tax every call c0 serves, for any
connector. Without one (the connector loaded outside a running loop, or that loop ended) it runs on a thread
of its own with its own event loop. Either way callers on any loop or thread share it, and a caller never
waits on another loop's channel. The connector that made it owns it and closes it with its client (when its
settings change, or it is closed); nothing else holds a view.

The events also say where a job ran, how it ended, its exit codes and its failure reason
(`RunFacts`), so an ending costs no GetJobDetails or GetJobErrors call when its job set is streamed.
For an architecture preference's job sets (a gang's own) they also say which jobs form each gang, so a
member learns how its siblings fared (`gang_members`: whether one's run failed, which ones succeeded) from
memory while the stream is live.

Memory stays bounded: a job that ended leaves `status_ended_keep_seconds` after its end or the last
ask about it, whichever came later (the polls that follow an end, while a0's error file is awaited,
stay free, even when the job was last asked about long before it ended), and a job nobody asks
about for `status_idle_seconds` leaves too.

Nothing freezes: a stream lives at most `status_stream_max_age_seconds` (then resumes from its last
message id), and a live stream's jobs are also checked in bulk once a `status_live_check_seconds`, so a
connection that went quiet without closing holds no state longer.

Over 450 lines: the stream followers and the bulk fallback share one job table and one loop,
and splitting them would put that shared state in two places (the event vocabulary already lives
in `job_set_streams`); the gangs' failures are noted from the same events, on the same follows.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Iterable, Iterator, Optional

from armada_client.armada import event_pb2

from armada_flyte.armada_names import REASON_STATES, TERMINAL_STATES, JobState
from armada_flyte.connector.armada.api import ArmadaApi
from armada_flyte.connector.config.settings import ConnectorConfig
from armada_flyte.connector.model.job_request import PREFERENCE_JOB_SET
from armada_flyte.connector.poll.job_set_streams import (
    GangMember,
    RunFacts,
    StreamEvent,
    StreamMode,
    Submissions,
    gang_of,
    gangs_in,
    job_event_of,
    jobs_in,
    submissions_in,
)

log = logging.getLogger(__name__)

JobSetKey = tuple[str, str]
"""(queue, job set id)."""
JobsOfEvents = dict[str, tuple[int, RunFacts]]
"""Each job's state and run facts, as a job set's events tell them."""
GangsOfEvents = dict[str, str]
"""Each job's gang id, as a job set's events tell them (jobs in a gang only)."""

_MAX_BACKOFF_SECONDS = 10.0
GRPC_DRAIN_SECONDS = 0.2
"""How long the view's loop runs after it stopped, for gRPC's late completions of the calls it cancelled."""


async def _nothing() -> dict[str, str]:
    return {}


@dataclass(frozen=True)
class _JobSetRead:
    """What one read of a job set's events says."""

    jobs: JobsOfEvents
    gangs: GangsOfEvents
    submissions: Submissions


@dataclass(slots=True)
class _Entry:
    state: int
    job_set: JobSetKey
    updated: float
    """When the state was last set (monotonic); a bulk answer older than this loses to it."""
    asked: float
    """When someone last asked for the job (or, for a job seen only on a stream, when it was seen)."""
    run: RunFacts = field(default_factory=RunFacts)
    """What the job set's events said about the job's latest run."""


@dataclass(eq=False)
class _Follow:
    """One job set's stream and what waits on it."""

    key: JobSetKey
    asked: float
    mode: StreamMode = StreamMode.BULK
    last_id: str = ""
    failing: bool = False
    checked: float = 0.0
    """When its jobs were last checked in bulk while the stream was live (monotonic; 0: since it started)."""
    heard: float = 0.0
    """When the stream last brought a message (monotonic): one that talks is not frozen, so it is not checked."""
    quiet_until: float = 0.0
    """While jobs are being submitted to the job set: when its stream may start (monotonic; 0: not waiting)."""
    task: Optional[asyncio.Task[None]] = None
    parked: dict[str, list[concurrent.futures.Future[int]]] = field(default_factory=dict)
    """Jobs asked for while the stream catches up: answered from it, or sent to bulk once it has."""
    gangs: dict[str, str] = field(default_factory=dict)
    """For a preference's job set: each gang member's gang id, from its submitted event."""
    gang_jobs: dict[str, dict[str, GangMember]] = field(default_factory=dict)
    """For a preference's job set: each gang's jobs, their states and runs (as few as the job set's jobs)."""
    submissions: Submissions = field(default_factory=Submissions)
    """For a preference's job set: the order its jobs were submitted (one per step of each of its tasks) and ended."""

    def move(self, event: StreamEvent) -> None:
        """The one way the mode changes."""
        self.mode = self.mode.after(event)


class StatusView:
    """Job states for one Armada, fed by job-set event streams and bulk GetJobStatus."""

    def __init__(self, settings: ConnectorConfig, home_loop: Optional[asyncio.AbstractEventLoop] = None):
        """`home_loop`: a loop that runs for as long as the process (c0's server loop), for the view to run on rather
        than on a loop of its own in a thread of its own: grpcio wakes every loop that used grpc.aio for every gRPC
        event (one poller a process), so a second loop taxes every call the process serves (benchmarks/README.md,
        `bench_second_aio_loop.py`). Not running when the view starts: the view's own loop, as without it."""
        self._api = ArmadaApi(settings)  # used on the view's loop only
        self._home_loop = home_loop
        self._stopped = threading.Event()
        """Set once a view on the home loop has shut down (its channels closed)."""
        self._limits = settings.limits
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._follows: dict[JobSetKey, _Follow] = {}
        self._wanted: dict[str, tuple[JobSetKey, list[concurrent.futures.Future[int]]]] = {}
        self._flush_due = False
        self._watchers: dict[str, list[concurrent.futures.Future[None]]] = {}
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._closed = False
        self._maintaining: Optional[asyncio.Task[None]] = None
        self._flushes: set[asyncio.Task[None]] = set()
        """Bulk refreshes under way, cancelled at close (else one retrying keeps calling Armada after it)."""
        self._event_reads: dict[JobSetKey, tuple[float, concurrent.futures.Future[_JobSetRead]]] = {}
        self._reads_under_way: set[concurrent.futures.Future[_JobSetRead]] = set()
        """Every job-set read not yet done, shared or not (a newer one replaces a read in `_event_reads`), so a
        close ends them all, also on a home loop that goes on after it."""

    # ---- what callers use (any thread, any loop) ----
    async def state_of(self, job_id: str, queue: str, job_set: str) -> int:
        """The job's state: from memory when known, else from the next bulk refresh (UNKNOWN if Armada has
        no such job yet)."""
        with self._lock:
            now = time.monotonic()
            follow = self._follow(queue, job_set, now)
            entry = self._entries.get(job_id)
            if entry is not None:
                entry.asked = now
                return entry.state
            future: concurrent.futures.Future[int] = concurrent.futures.Future()
            if follow.mode is StreamMode.SYNCING:
                follow.parked.setdefault(job_id, []).append(future)
            else:
                self._want(job_id, follow.key, future)
        return await asyncio.wrap_future(future)

    async def events_of(self, job_id: str, queue: str, job_set: str) -> Optional[tuple[int, RunFacts]]:
        """The job's state and run facts as its job set's events tell them (None: the events hold no such
        job), whatever the job status API says. One read of the job set, shared by the asks of one refresh
        period; a failed read raises (Armada's translated error)."""
        read = await self._job_set_read((queue, job_set))
        return read.jobs.get(job_id)

    async def gang_members(self, queue: str, job_set: str, gang_id: str) -> tuple[GangMember, ...]:
        """The jobs of the gang, their states and what the events said of their runs: from memory while the job
        set's stream is live, else from a read of its events shared as `events_of`'s. A failed read raises
        (Armada's translated error)."""
        key = (queue, job_set)
        with self._lock:
            follow = self._follows.get(key)
            if follow is not None and follow.mode is StreamMode.LIVE:
                return tuple(follow.gang_jobs.get(gang_id, {}).values())
        read = await self._job_set_read(key)
        return tuple(GangMember(job_id, *read.jobs[job_id]) for job_id, gang in read.gangs.items() if gang == gang_id)

    async def submitted_before_end(
        self, queue: str, job_set: str, client_id: str, earlier: str, earlier_ended: bool
    ) -> tuple[str, bool]:
        """(the job submitted with `client_id` before the `earlier` job ended, or while it has not: "" if none;
        whether the job set's events hold the `earlier` job's end). From the order of the events, never their
        times. From memory while the job set's stream is live (for an `earlier` job that ended, only once the
        stream brought its end), else from a read of its events shared as `events_of`'s; a failed read raises
        (Armada's translated error)."""
        key = (queue, job_set)
        with self._lock:
            follow = self._follows.get(key)
            if follow is not None and follow.mode is StreamMode.LIVE:
                ended = earlier in follow.submissions.ended
                if ended or not earlier_ended:
                    return follow.submissions.before_end(client_id, earlier), ended
        submissions = (await self._job_set_read(key)).submissions
        return submissions.before_end(client_id, earlier), earlier in submissions.ended

    async def _job_set_read(self, key: JobSetKey) -> _JobSetRead:
        """The job set's events read once, shared by the asks of one refresh period."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the status view is closed")
            self._ensure_loop()
            now = time.monotonic()
            read = self._event_reads.get(key)
            if read is None or now - read[0] > self._limits.status_refresh_seconds:
                future = asyncio.run_coroutine_threadsafe(self._read_job_set(key), self._loop_now())
                self._reads_under_way.add(future)
                future.add_done_callback(self._reads_under_way.discard)
                read = self._event_reads[key] = (now, future)
        return await asyncio.wrap_future(read[1])

    async def _read_job_set(self, key: JobSetKey) -> _JobSetRead:
        messages = await self._api.job_set_history(*key)
        return _JobSetRead(jobs_in(messages), gangs_in(messages), submissions_in(messages))

    def run_facts(self, job_id: str) -> Optional[RunFacts]:
        """What the events said about the job's latest run (None: the view holds no events of it)."""
        with self._lock:
            entry = self._entries.get(job_id)
            return entry.run if entry is not None else None

    def submitted_to(self, queue: str, job_set: str) -> None:
        """A job was just submitted to the job set: follow it, its stream starting once no job was submitted to
        it for a refresh period, or at the first ask about one of its jobs, whichever comes first."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the status view is closed")
            now = time.monotonic()
            key = (queue, job_set)
            follow = self._follows.get(key)
            if follow is None:
                follow = self._follows[key] = _Follow(key, now, checked=now, quiet_until=now)
                self._ensure_loop()
            if follow.quiet_until:
                follow.quiet_until = now + self._limits.status_refresh_seconds
            follow.asked = now

    async def wait_for_change(self, job_id: str, state: int, timeout: float) -> None:
        """Return once the view holds a state for the job other than `state`, or after `timeout`."""
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        with self._lock:
            entry = self._entries.get(job_id)
            if entry is not None and entry.state != state:
                return
            self._watchers.setdefault(job_id, []).append(future)
        try:
            await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        except asyncio.TimeoutError:
            pass
        finally:
            with self._lock:
                waiting = self._watchers.get(job_id, [])
                if future in waiting:
                    waiting.remove(future)
                if not waiting:
                    self._watchers.pop(job_id, None)

    def size(self) -> tuple[int, int]:
        """(jobs held, job sets followed): what the view keeps in memory."""
        with self._lock:
            return len(self._entries), len(self._follows)

    def streaming(self, queue: str, job_set: str) -> bool:
        """Whether the job set's stream is caught up and watching (else its jobs are polled in bulk)."""
        with self._lock:
            follow = self._follows.get((queue, job_set))
            return follow is not None and follow.mode is StreamMode.LIVE

    def close(self) -> None:
        """Stop following and polling; waiting callers get an error. Doesn't block; once is enough."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self._shut_down()))

    def wait_stopped(self, timeout: float) -> bool:
        """After `close`: whether the view's thread (and so its channels) ended within `timeout` seconds; on the
        home loop, whether its shutdown did (never call it on that loop: it would wait for itself)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return self._loop is None or self._stopped.wait(timeout)

    # ---- bookkeeping under the lock ----
    def _follow(self, queue: str, job_set: str, now: float) -> _Follow:
        if self._closed:
            raise RuntimeError("the status view is closed")
        key = (queue, job_set)
        follow = self._follows.get(key)
        if follow is None:
            follow = self._follows[key] = _Follow(key, now, checked=now)
            self._ensure_loop()
            self._start_if_free(follow)
        elif follow.quiet_until:  # waiting for its submits to end: an ask starts it now
            self._start_if_free(follow)
        follow.asked = now
        return follow

    def _start_if_free(self, follow: _Follow) -> None:
        """Start the job set's stream if a stream slot is free (else the refresh gives it the next free one)."""
        follow.quiet_until = 0.0
        if self._may_stream():
            follow.move(StreamEvent.STARTED)
            self._call(lambda: self._start_stream(follow))

    def _may_stream(self) -> bool:
        if not self._limits.status_event_streams:
            return False
        streaming = sum(1 for f in self._follows.values() if f.mode is not StreamMode.BULK)
        return streaming < self._limits.status_streams_max

    def _want(self, job_id: str, key: JobSetKey, future: Optional[concurrent.futures.Future[int]]) -> None:
        """Put the job into the next bulk refresh (`future`, if given, gets its state)."""
        _, futures = self._wanted.setdefault(job_id, (key, []))
        if future is not None:
            futures.append(future)
        if not self._flush_due:
            self._flush_due = True
            window = self._limits.status_batch_window_seconds
            self._call(lambda: self._loop_now().call_later(window, self._start_flush))

    def _set(self, job_id: str, key: JobSetKey, state: int, now: float) -> _Entry:
        """The job's entry, with `state` unless it already ended; wakes those waiting for a change."""
        entry = self._entries.get(job_id)
        if entry is None:
            entry = self._entries[job_id] = _Entry(state, key, now, now)
        elif entry.state != state and entry.state not in TERMINAL_STATES:
            entry.state, entry.updated = state, now
        else:
            return entry
        if self._watchers:
            for watcher in self._watchers.pop(job_id, ()):
                if not watcher.done():
                    watcher.set_result(None)
        return entry

    # ---- the view's own loop ----
    def _ensure_loop(self) -> None:
        if self._loop is not None:
            return
        home = self._home_loop
        if home is not None and home.is_running():
            self._loop = home
            home.call_soon_threadsafe(self._start_maintaining)
            return
        loop = self._loop = asyncio.new_event_loop()
        started = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(started.set)
            loop.call_soon(self._start_maintaining)
            loop.run_forever()
            # gRPC hands the completions of the calls its channels' close cancelled to this loop a little
            # later; closing at once makes each one print "Event loop is closed" after the run.
            loop.run_until_complete(asyncio.sleep(GRPC_DRAIN_SECONDS))
            loop.close()

        self._thread = threading.Thread(target=run, name="armada-status-view", daemon=True)
        self._thread.start()
        started.wait()

    def _start_maintaining(self) -> None:
        if not self._closed:
            self._maintaining = asyncio.get_running_loop().create_task(self._maintain())

    def _loop_now(self) -> asyncio.AbstractEventLoop:
        assert self._loop is not None
        return self._loop

    def _call(self, callback: object) -> None:
        self._loop_now().call_soon_threadsafe(callback)  # type: ignore[arg-type]

    def _start_flush(self) -> None:
        flush = asyncio.ensure_future(self._flush())
        self._flushes.add(flush)
        flush.add_done_callback(self._flushes.discard)

    async def _flush(self) -> None:
        """One bulk refresh: every wanted id, in concurrent GetJobStatus calls of at most 500 ids. The jobs
        it finds ended (with no events to say how) get their run details and reasons in bulk before the
        view shows them ended, so no poll asks for them one by one."""
        with self._lock:
            wanted, self._wanted, self._flush_due = self._wanted, {}, False
        if not wanted:
            return
        sent = time.monotonic()
        try:
            states = await self._api.status(list(wanted))
            with self._lock:
                ended = {
                    job_id: state
                    for job_id, state in states.items()
                    if state in TERMINAL_STATES
                    and ((entry := self._entries.get(job_id)) is None or not entry.run.ended)
                }
            runs = await self._runs_of_endings(ended) if ended else {}
        except asyncio.CancelledError:  # the view closed under it
            _fail_all(_futures_of(wanted), RuntimeError("the status view was closed"))
            raise
        except Exception as exc:  # every waiter sees the failure; the next get asks again
            _fail_all(_futures_of(wanted), exc)
            return
        with self._lock:
            for job_id, (key, futures) in wanted.items():
                state = states.get(job_id, JobState.UNKNOWN)
                entry = self._entries.get(job_id)
                if state != JobState.UNKNOWN and (entry is None or entry.updated <= sent):
                    entry = self._set(job_id, key, state, time.monotonic())
                    if job_id in runs and not entry.run.ended:
                        entry.run = _merged(runs[job_id], entry.run)
                answer = entry.state if entry is not None else state
                for future in futures:
                    if not future.done():
                        future.set_result(answer)

    async def _runs_of_endings(self, ended: dict[str, int]) -> dict[str, RunFacts]:
        """Run details (GetJobDetails) of jobs seen ended, and Armada's reason (GetJobErrors) for those that
        failed, each in calls of at most 500 ids. On a failure, none: the polls then ask for themselves."""
        failed = {job_id for job_id, state in ended.items() if state in REASON_STATES}
        try:
            details, reasons = await asyncio.gather(
                self._api.run_details(list(ended)), self._api.errors(list(failed)) if failed else _nothing()
            )
        except Exception as exc:
            log.debug("run details of %d ended jobs: %s; their polls ask for them", len(ended), exc)
            return {}
        runs = {}
        for job_id in ended:
            run = details.get(job_id)
            runs[job_id] = RunFacts(
                node=run.node if run else "",
                cluster=run.cluster if run else "",
                started_at=run.started_at if run else 0.0,
                ended=True,
                finished_at=run.finished_at if run else 0.0,
                reason=reasons.get(job_id, "") if job_id in failed else None,
            )
        return runs

    def _start_stream(self, follow: _Follow) -> None:
        follow.task = asyncio.ensure_future(self._stream(follow))

    async def _stream(self, follow: _Follow) -> None:
        """Catch up on the job set (a read that ends), then watch it; on an error, fall back and retry. A stream
        lives at most `status_stream_max_age_seconds`, then is opened again at once from its last message (its
        jobs polled in bulk until it has caught up): a connection that went quiet without closing (a proxy
        that stopped forwarding) can't hold states longer."""
        queue, job_set = follow.key
        first_backoff = self._limits.status_batch_window_seconds * 10
        backoff, max_age = first_backoff, self._limits.status_stream_max_age_seconds

        async def one_stream() -> None:
            nonlocal backoff
            async for message in self._api.job_set_events(queue, job_set, follow.last_id, watch=False):
                self._apply(follow, message)
            self._caught_up(follow)
            if follow.failing:  # at the warning's level, so whoever saw it break sees it end
                log.warning("event stream of job set %s/%s: streaming again", *follow.key)
                follow.failing = False
            async for message in self._api.job_set_events(queue, job_set, follow.last_id, watch=True):
                self._apply(follow, message)
                backoff, follow.failing = first_backoff, False

        while not self._closed and self._follows.get(follow.key) is follow:
            opened = time.monotonic()
            try:
                await asyncio.wait_for(one_stream(), max_age)
                self._fall_back(follow)  # the server ended the watch: resume shortly
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if isinstance(exc, asyncio.TimeoutError) and time.monotonic() - opened >= max_age:  # its age is up
                    log.debug("event stream of job set %s/%s: %.0fs old; opening it again", *follow.key, max_age)
                    self._fall_back(follow)
                    continue
                report = log.debug if follow.failing else log.warning
                report("event stream of job set %s/%s: %s; polling its jobs in bulk until it's back", *follow.key, exc)
                follow.failing = True
                self._fall_back(follow)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _MAX_BACKOFF_SECONDS)

    def _apply(self, follow: _Follow, message: event_pb2.EventStreamMessage) -> None:
        moved = job_event_of(message)
        now = time.monotonic()
        with self._lock:
            follow.last_id, follow.heard = message.id, now
            if moved is None:
                return
            job_id = moved.job_id
            entry = self._set(job_id, follow.key, moved.state, now)
            entry.run = entry.run.after(moved.kind, moved.event)
            if PREFERENCE_JOB_SET in follow.key[1]:
                self._note_gang(follow, job_id, gang_of(moved), entry)
                follow.submissions.note(moved)
            if follow.parked and follow.mode is not StreamMode.SYNCING and (parked := follow.parked.pop(job_id, None)):
                self._answer(job_id, parked)

    @staticmethod
    def _note_gang(follow: _Follow, job_id: str, gang_id: str, entry: _Entry) -> None:
        """Keep which gang a job is in, and its state and run as they change."""
        if gang_id:
            follow.gangs[job_id] = gang_id
        if gang := follow.gangs.get(job_id):
            follow.gang_jobs.setdefault(gang, {})[job_id] = GangMember(job_id, entry.state, entry.run)

    def _caught_up(self, follow: _Follow) -> None:
        """The stream has the job set's past: answer parked gets from it, send the rest to bulk."""
        with self._lock:
            follow.move(StreamEvent.CAUGHT_UP)
            self._release_parked(follow)

    def _fall_back(self, follow: _Follow) -> None:
        with self._lock:
            follow.move(StreamEvent.LOST)
            self._release_parked(follow)

    def _release_parked(self, follow: _Follow) -> None:
        parked, follow.parked = follow.parked, {}
        for job_id, futures in parked.items():
            if job_id in self._entries:
                self._answer(job_id, futures)
            else:
                for future in futures:
                    self._want(job_id, follow.key, future)

    def _answer(self, job_id: str, futures: list[concurrent.futures.Future[int]]) -> None:
        entry = self._entries[job_id]
        for future in futures:
            if not future.done():
                future.set_result(entry.state)

    async def _maintain(self) -> None:
        """Every refresh period: poll in bulk the jobs no live stream covers (and, once a
        `status_live_check_seconds`, those a live one does), drop what nobody asks about,
        and give free stream slots to job sets waiting for one."""
        while not self._closed:
            await asyncio.sleep(self._limits.status_refresh_seconds)
            now = time.monotonic()
            idle, ended_keep = self._limits.status_idle_seconds, self._limits.status_ended_keep_seconds
            refresh = self._limits.status_refresh_seconds
            stale_before = now - self._limits.status_refresh_seconds / 2
            with self._lock:
                for job_id, entry in list(self._entries.items()):
                    # an ended job stays for the polls that follow its end, however long before it was asked
                    ended = entry.state in TERMINAL_STATES
                    since = max(entry.asked, entry.updated) if ended else entry.asked
                    if now - since > (ended_keep if ended else idle):
                        del self._entries[job_id]
                for key in [k for k, (at, _) in self._event_reads.items() if now - at > refresh]:
                    del self._event_reads[key]
                for key in [k for k, f in self._follows.items() if now - f.asked > idle and not f.parked]:
                    follow = self._follows.pop(key)
                    if follow.task is not None:
                        follow.task.cancel()
                polled = {k for k, f in self._follows.items() if f.mode in (StreamMode.DOWN, StreamMode.BULK)}
                polled |= self._live_checks_due(now)
                for job_id, entry in self._entries.items():
                    if entry.job_set in polled and entry.state not in TERMINAL_STATES and entry.updated < stale_before:
                        self._want(job_id, entry.job_set, None)
                for follow in self._follows.values():
                    if follow.mode is StreamMode.BULK and now >= follow.quiet_until and self._may_stream():
                        follow.quiet_until = 0.0
                        follow.move(StreamEvent.STARTED)
                        self._start_stream(follow)

    def _live_checks_due(self, now: float) -> set[JobSetKey]:
        """Job sets with a live stream whose jobs are due a bulk check: quiet (no message) for
        `status_live_check_seconds`, and not checked within it. A stream that went quiet without closing misses no
        ending for longer; one that talks is left alone (a bulk answer may be ahead of its events, whose run facts
        the details Armada gives lack on some clusters: the node of a run that never reported running)."""
        due = set()
        for key, follow in self._follows.items():
            quiet_since = max(follow.checked, follow.heard)
            if follow.mode is StreamMode.LIVE and now - quiet_since >= self._limits.status_live_check_seconds:
                follow.checked = now
                due.add(key)
        return due

    async def _shut_down(self) -> None:
        with self._lock:
            follows, self._follows = list(self._follows.values()), {}
            wanted, self._wanted = self._wanted, {}
            self._event_reads = {}
            reads = list(self._reads_under_way)
        for read in reads:
            read.cancel()
        waiting = list(_futures_of(wanted))
        for follow in follows:
            waiting += [future for futures in follow.parked.values() for future in futures]
        _fail_all(waiting, RuntimeError("the status view was closed"))
        tasks = [t for t in [self._maintaining, *self._flushes, *(f.task for f in follows)] if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._api.close()
        if self._thread is not None:  # the view's own loop; a home loop goes on
            asyncio.get_running_loop().stop()
        self._stopped.set()


def _futures_of(
    wanted: dict[str, tuple[JobSetKey, list[concurrent.futures.Future[int]]]],
) -> Iterator[concurrent.futures.Future[int]]:
    return (future for _, futures in wanted.values() for future in futures)


def _fail_all(futures: Iterable[concurrent.futures.Future[int]], error: BaseException) -> None:
    """Every asker not yet answered gets `error`."""
    for future in futures:
        if not future.done():
            future.set_exception(error)


def _merged(details: RunFacts, streamed: RunFacts) -> RunFacts:
    """The run facts of an ending found in bulk, with what the stream already said where the details say
    nothing (a run's node and start, from its running event)."""
    return replace(
        details,
        node=details.node or streamed.node,
        cluster=details.cluster or streamed.cluster,
        started_at=details.started_at or streamed.started_at,
    )
