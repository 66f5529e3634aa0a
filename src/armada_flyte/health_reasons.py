"""Why a server answers a health check NOT_SERVING, sent beside the answer as trailing metadata.

Armada's `HealthCheckResponse` has a status and no text. The embedded server adds the problem and
its fix to Submit.Health's trailers, so `armada-flyte doctor` and the view can say why; a real
Armada sends none, and readers fall back to the bare status.
"""

from __future__ import annotations

from typing import Iterable, Optional

PROBLEM_KEY = "armada-flyte-problem-bin"
FIX_KEY = "armada-flyte-fix-bin"
"""`-bin` keys: the values are UTF-8 bytes (a state folder's path need not be ASCII)."""


def as_metadata(problem: str, fix: str) -> tuple[tuple[str, bytes], ...]:
    return ((PROBLEM_KEY, problem.encode()), (FIX_KEY, fix.encode()))


def reason_in(metadata: Optional[Iterable[tuple[str, object]]]) -> Optional[tuple[str, str]]:
    """(problem, fix) from a call's trailing metadata, or None when the server gave no reason."""
    found = {key: value for key, value in metadata or ()}
    problem, fix = found.get(PROBLEM_KEY), found.get(FIX_KEY, b"")
    if not isinstance(problem, bytes):
        return None
    return problem.decode(errors="replace"), fix.decode(errors="replace") if isinstance(fix, bytes) else ""
