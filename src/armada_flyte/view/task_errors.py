"""What a job's task did, where the view can know it: a0's error.pb, read as the connector reads it.

a0 records a task that raised in error.pb under the action's outputs path and exits 0, so Armada says
SUCCEEDED for it. For jobs the connector submitted (their pod runs `a0 ... --outputs-path s3://...`), the
view reads that file with the blob store settings it was given (`armada-flyte dev`'s and the local stack's
views have them; `armada-flyte view` takes the connector's, FLYTE_BLOB_*). An ended job's file never
changes, so each is read once; a file that can't be read leaves the outcome unknown (Armada's state shows).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from typing import Any, Optional

from armada_flyte.armada_names import JobState
from armada_flyte.connector.config.blob import BlobSettings
from armada_flyte.connector.model.task_error import TaskError
from armada_flyte.connector.poll.error_file import ErrorFileUnreadable, read_task_error
from armada_flyte.connector.submit.pod import outputs_path

log = logging.getLogger(__name__)

MAX_REMEMBERED = 20_000
READ_TIMEOUT_SECONDS = 5.0
READS_AT_ONCE = 16
Known = dict[str, Optional[TaskError]]
"""job id -> a0's error (None: it recorded none, the task succeeded); a job left out is not known."""


def a0_outputs_path(details: Any) -> str:
    """Where a0 writes the job's error.pb: its main container's `--outputs-path` ("" for other jobs)."""
    spec = details.job_spec
    pod = spec.pod_spec if spec.HasField("pod_spec") else (spec.pod_specs[0] if len(spec.pod_specs) else None)
    if pod is None:
        return ""
    for container in pod.containers:
        args = list(container.args)
        if args[:1] == ["a0"] or list(container.command)[:1] == ["a0"]:
            return outputs_path([*container.command, *args])
    return ""


class TaskErrors:
    """a0's error of each ended connector job, read once; owned by one view."""

    def __init__(self, blob: BlobSettings, timeout: float = READ_TIMEOUT_SECONDS):
        self._blob = blob
        self._timeout = timeout
        self._known: OrderedDict[str, Optional[TaskError]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def readable(self) -> bool:
        """The view was given a blob store to read (else every outcome is Armada's state)."""
        return bool(self._blob.endpoint)

    def of(self, details: dict[str, Any]) -> Known:
        """What a0 recorded for each job of `details` that Armada says SUCCEEDED (the others' outcome is
        Armada's), reading the files not read yet."""
        ended = {job_id: d for job_id, d in details.items() if d.state == JobState.SUCCEEDED}
        with self._lock:
            wanted = {job_id: a0_outputs_path(d) for job_id, d in ended.items() if job_id not in self._known}
        wanted = {job_id: path for job_id, path in wanted.items() if path}
        if wanted and self.readable:
            self._remember(asyncio.run(self._read_all(wanted)))
        with self._lock:
            return {job_id: self._known[job_id] for job_id in ended if job_id in self._known}

    async def _read_all(self, paths: dict[str, str]) -> Known:
        gate = asyncio.Semaphore(READS_AT_ONCE)

        async def one(path: str) -> Optional[TaskError]:
            async with gate:
                return await read_task_error(path, self._timeout, self._blob)

        results = await asyncio.gather(*(one(path) for path in paths.values()), return_exceptions=True)
        found: Known = {}
        for job_id, result in zip(paths, results):
            if isinstance(result, ErrorFileUnreadable):
                log.debug("view: job %s: %s", job_id, result)
            elif isinstance(result, BaseException):
                log.debug("view: job %s: could not read its error.pb: %s", job_id, result)
            else:
                found[job_id] = result
        return found

    def _remember(self, found: Known) -> None:
        with self._lock:
            self._known.update(found)
            while len(self._known) > MAX_REMEMBERED:
                self._known.popitem(last=False)
