"""An executor whose pods end the moment they start, so a test can end a thousand jobs in a second.

A pod whose command is `false` fails with exit code 1 (as the process pod runner reports it: the
container, its exit code and reason); any other pod succeeds. The reports come from one thread of
the runner's own, never from inside `launch` (the server may hold its lock there).
"""

from __future__ import annotations

import queue
import threading
from typing import Optional

from armada_flyte.pod_runner.model import ContainerEnd, PodLaunch, RunReporter


class InstantPods:
    """A `PodRunner` that runs nothing: each launched pod goes pending, running and ends at once."""

    def __init__(self) -> None:
        self._launched: queue.SimpleQueue[Optional[tuple[PodLaunch, RunReporter]]] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._report, name="instant-pods", daemon=True)
        self._thread.start()

    def launch(self, pod: PodLaunch, reporter: RunReporter) -> None:
        self._launched.put((pod, reporter))

    def kill(self, run_id: str, grace_seconds: float) -> None:
        """Nothing runs, so nothing is left to stop."""

    def shutdown(self) -> None:
        self._launched.put(None)
        self._thread.join(timeout=10)

    def _report(self) -> None:
        while (launched := self._launched.get()) is not None:
            pod, reporter = launched
            if not (reporter.pending(pod.run_id) and reporter.running(pod.run_id)):
                continue
            container = pod.container
            if list(container.command) == ["false"]:
                end = ContainerEnd(container.name, 1, "Error", "exit status 1")
                reporter.finished(pod.run_id, 1, "exit status 1", (end,))
            else:
                reporter.finished(pod.run_id, 0, "")
