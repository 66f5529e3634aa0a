"""Keep the cyclic garbage collector's pauses off the request path while a big backlog builds up.

The embedded server keeps every job for its lifetime. With 100,000 jobs the process holds over a
million objects, and each full collection walks all of them while holding the GIL: every gRPC
call waits (seconds, measured). Objects that will live as long as the server needn't be walked
again and again: after every thousand new jobs, a young collection clears recent garbage and
`gc.freeze()` moves the survivors out of the collector's sight. What it costs: garbage that had
already reached the oldest generation at that moment is never freed (small next to the jobs).
"""

from __future__ import annotations

import gc

FREEZE_EVERY_JOBS = 1_000
"""A full collection walks only what was made since the last freeze: about 1,000 jobs' objects keep it
to a few milliseconds (5,000 made it 25-30 ms, measured at 100k jobs)."""


class GcFreezer:
    """Freezes the heap each time the job count has grown by `every` since the last freeze."""

    def __init__(self, every: int = FREEZE_EVERY_JOBS):
        self._every = every
        self._frozen_at = 0

    def jobs_now(self, jobs: int) -> bool:
        """Call with the current job count; returns whether it froze."""
        if jobs - self._frozen_at < self._every:
            return False
        gc.collect(1)
        gc.freeze()
        self._frozen_at = jobs
        return True
