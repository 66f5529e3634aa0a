"""A task's log lines on the console of the local run that waits for it, as `kubectl logs -f` shows a pod's.

A task runs in a pod elsewhere, so its `print()` goes to the pod's log, not to the laptop. While a
local run waits for a job, it reads the job's log from Armada's log service (Binoculars) and prints
the lines it has not printed yet, prefixed with the call (`local.console.CallName`); a0's own chatter
is left out (`pod_log_lines`).
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Optional, TextIO

from armada_flyte.local.pod_log_lines import PodLogLines

log = logging.getLogger(__name__)


class TaskLogFollower:
    """Prints one job's new log lines each time `catch_up` is called; stops asking after the log service fails."""

    def __init__(self, api: Any, job_id: str, namespace: str, prefix: str, out: Optional[TextIO] = None):
        self._api = api
        self._job_id = job_id
        self._namespace = namespace
        self.prefix = prefix
        self._out = out
        self._printed = 0
        self._broken = False
        self.lines = PodLogLines()

    async def catch_up(self) -> None:
        """Print the lines that arrived since the last call (the log of the job's latest run)."""
        if self._broken:
            return
        try:
            lines = await self._api.logs(self._job_id, self._namespace)
        except Exception as exc:  # the run goes on without its log; say once where it is
            self._broken = True
            log.warning(
                "%s the log of Armada job %s can't be read here (%s); see it with `armadactl` or Lookout",
                self.prefix,
                self._job_id,
                exc,
            )
            return
        if len(lines) < self._printed:  # a new run of the job (Armada retried it): its log starts over
            self._printed = 0
            self.lines.restart()
        out = self._out or sys.stdout
        for line in self.lines.shown(lines[self._printed :]):
            print(f"{self.prefix} {line}".rstrip(), file=out)
        out.flush()
        self._printed = len(lines)
