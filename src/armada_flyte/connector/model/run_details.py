"""Where a job's latest run went, as Armada's GetJobDetails (or the job set's events) tell it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RunDetails:
    """Where a job's latest run went."""

    node: str
    cluster: str
    state: str
    finished_at: float
    """When the run ended, seconds since the epoch (0: not ended, or not reported)."""
    started_at: float = 0.0
    """When its container started (else when its pod was pending or leased); 0: not reported."""
