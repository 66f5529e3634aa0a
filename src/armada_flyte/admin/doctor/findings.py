"""The one value every doctor check produces."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable


@dataclass(frozen=True)
class Finding:
    """One thing the doctor looked at: fine, or a problem with its fix."""

    check: str
    """Stable name of the check, e.g. `executor.tracked-labels`."""
    ok: bool
    message: str
    """What was found, in words an admin can act on."""
    fix: str = ""
    """How to fix it (empty when ok, but for a warning)."""
    warning: bool = False
    """Works, but an admin should look: not a problem (the doctor still exits 0)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def passed(check: str, message: str) -> Finding:
    return Finding(check, True, message)


def warning(check: str, message: str, fix: str) -> Finding:
    return Finding(check, True, message, fix, warning=True)


def problem(check: str, message: str, fix: str) -> Finding:
    return Finding(check, False, message, fix)


def problems(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if not f.ok]
