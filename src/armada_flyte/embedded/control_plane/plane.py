"""The embedded Armada's control plane: the job store and the three parts that change it.

`commands` (what the API asks for), `runs` (the lifecycle of runs, which the executor reports
to) and the scheduling loop share one lock and one job store (`PlaneState`); `queries` reads
them. The plane builds them, restores what an earlier server saved, and starts and stops them.
"""

from __future__ import annotations

import threading
from typing import Optional

from armada_flyte.cluster.cluster_file import Cluster
from armada_flyte.cluster.ingress import IngressController
from armada_flyte.cluster.secrets import SecretStore
from armada_flyte.embedded.control_plane.commands import Commands
from armada_flyte.embedded.control_plane.plane_state import PlaneState
from armada_flyte.embedded.control_plane.queries import Queries
from armada_flyte.embedded.control_plane.run_lifecycle import RunLifecycle
from armada_flyte.embedded.control_plane.scheduling_loop import SchedulingLoop
from armada_flyte.embedded.rules.defaults import DEFAULT_PRIORITY_CLASS
from armada_flyte.embedded.scheduling.scheduler import Scheduler
from armada_flyte.embedded.store.event_log import EventLog, EventRecord
from armada_flyte.embedded.store.jobs import ACTIVE
from armada_flyte.embedded.store.persistence import EphemeralStore, StateStore
from armada_flyte.embedded.store.queues import QueueRegistry
from armada_flyte.embedded.store.rows import event_fields, job_from_row
from armada_flyte.embedded.store.state_file import SavedState
from armada_flyte.embedded.store.write_health import WriteHealth
from armada_flyte.pod_runner import PodRunner


class ControlPlane:
    """Queues, jobs, runs and their events; the API, the scheduler and the pod runner work through it."""

    def __init__(
        self,
        cluster: Cluster,
        pod_runner: PodRunner,
        *,
        visibility_delay: float = 0.0,
        paused: bool = False,
        secrets: Optional[SecretStore] = None,
        default_priority_class: str = DEFAULT_PRIORITY_CLASS,
        store: Optional[StateStore] = None,
        ingress: Optional[IngressController] = None,
    ):
        store = store if store is not None else EphemeralStore()
        lock = threading.RLock()
        store.attach(lock)
        saved = store.load()
        self._state = PlaneState(
            cluster, store, lock, EventLog(store), QueueRegistry(store, tuple(saved.queues)), Scheduler(cluster)
        )
        self.cluster = cluster
        self.events = self._state.events
        self.queues = self._state.queues
        self.runs = RunLifecycle(
            self._state, pod_runner, secrets if secrets is not None else SecretStore(), ingress, paused
        )
        self.commands = Commands(self._state, self.runs, default_priority_class)
        self.queries = Queries(self._state, visibility_delay)
        self._loop = SchedulingLoop(self._state, self.runs)
        self._restore(saved)

    @property
    def pod_runner(self) -> PodRunner:
        return self.runs.pod_runner

    @property
    def write_health(self) -> WriteHealth:
        """Whether the state's writes go through (the health services report it)."""
        return self._state.store.health

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        """Stop scheduling, end every watch, and kill every pod still running."""
        self._loop.stop()
        self.events.close()
        # The store is closed before the pods are killed: what their deaths do to their jobs is decided
        # at the next start (as after a kill -9), not by the exit codes of pods killed at stop.
        self._state.store.close()
        self.pod_runner.shutdown()

    def pause(self) -> None:
        """Leases stay LEASED until `resume`, as if the executor had stopped pulling work."""
        self.runs.pause()

    def resume(self) -> None:
        self.runs.resume()

    def lose_pods(self) -> None:
        """What an executor restart does to the pods it had (see `RunLifecycle.lose_pods`)."""
        self.runs.lose_pods()

    def _restore(self, saved: SavedState) -> None:
        """The jobs and events of an earlier server on this state, then what its death did to their pods.

        Pods die with the server, so a restart is an executor that lost its pods: each job that had
        a pod ends as Armada ends it (`lose_pods`): running ones fail, starting ones are retried."""
        if not saved.jobs:
            return
        state = self._state
        with state.lock:
            for row in saved.jobs:
                job = job_from_row(row, self.cluster, state.store.read_log)
                self.commands.restored(job)
                state.track(job)
                run = job.latest_run
                if job.state in ACTIVE and run is not None and run.finished_at is None and run.node.index >= 0:
                    run.holds_capacity = True
                    state.scheduler.reserve(job, run.node.index)
            streams: dict[tuple[str, str], list] = {}
            for event in saved.events:
                job = state.index.jobs.get(event.job_id)
                if job is not None:
                    record = EventRecord(event.kind, job, event.created, event_fields(event.kind, event.fields))
                    entry = ((event.ms, event.seq, event.subseq), event.last, record)
                    streams.setdefault((event.queue, event.job_set), []).append(entry)
            for (queue, job_set), entries in streams.items():
                self.events.restore(queue, job_set, entries)
        self.lose_pods()
