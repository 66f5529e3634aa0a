"""The job sets local runs on this machine used, per Armada address, so `armada-flyte view` of a real Armada
(whose gRPC API lists no job sets) can follow them without being told each one.

A small JSON file in the user's state folder (`$XDG_STATE_HOME/armada-flyte/job-sets.json`, else
`~/.local/state/...`), private to the user, holding the newest `MAX_KEPT` entries. Losing it loses only
this convenience, so a failure to read or write it is logged at debug level and otherwise ignored.
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import tempfile
import threading
import time
from typing import Optional

log = logging.getLogger(__name__)

MAX_KEPT = 200
FILE_NAME = "job-sets.json"
_lock = threading.Lock()
_written: set[tuple[str, str, str]] = set()
"""What this process has recorded already (a fan-out submits many jobs to one job set)."""


def default_path() -> pathlib.Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return pathlib.Path(base) / "armada-flyte" / FILE_NAME


def recorded(armada_url: str, path: Optional[pathlib.Path] = None) -> list[tuple[str, str]]:
    """(queue, job set) of the runs recorded for the Armada at `armada_url`, newest first."""
    entries = _read(path or default_path())
    return [(e["queue"], e["job_set"]) for e in entries if e.get("armada") == armada_url]


def remember(armada_url: str, queue: str, job_set: str, path: Optional[pathlib.Path] = None) -> None:
    """Record that a run used this job set (once per process)."""
    key = (armada_url, queue, job_set)
    with _lock:
        if key in _written:
            return
        _written.add(key)
        path = path or default_path()
        entries = [e for e in _read(path) if (e.get("armada"), e.get("queue"), e.get("job_set")) != key]
        entries.insert(0, {"armada": armada_url, "queue": queue, "job_set": job_set, "at": time.time()})
        try:
            _write(path, entries[:MAX_KEPT])
        except OSError as exc:
            log.debug("could not record job set %s in %s: %s", job_set, path, exc)


def _read(path: pathlib.Path) -> list[dict]:
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        if not isinstance(exc, FileNotFoundError):
            log.debug("could not read %s: %s", path, exc)
        return []
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def _write(path: pathlib.Path, entries: list[dict]) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".job-sets-")  # created 0600
    try:
        with os.fdopen(handle, "w") as out:
            json.dump(entries, out)
        os.replace(temporary, path)
    except BaseException:
        pathlib.Path(temporary).unlink(missing_ok=True)
        raise
