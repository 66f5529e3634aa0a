"""Doctor output: a table for people, JSON for scripts and CI."""

from __future__ import annotations

import json
import textwrap
from typing import Sequence

from armada_flyte.admin.doctor.findings import Finding, problems

_WIDTH = 100


def summary(findings: Sequence[Finding]) -> str:
    bad = len(problems(findings))
    warned = sum(1 for f in findings if f.warning)
    if not bad:
        also = f" ({warned} with a warning)" if warned else ""
        return f"armada-flyte doctor: all {len(findings)} checks passed{also}"
    return f"armada-flyte doctor: {bad} problem{'s' if bad != 1 else ''} in {len(findings)} checks"


def table(findings: Sequence[Finding]) -> str:
    """One row per finding (result, check, message), with each problem's fix beneath it."""
    check_width = max((len(f.check) for f in findings), default=5)
    indent = " " * (9 + check_width + 2)
    lines = [summary(findings), ""]
    for finding in findings:
        result = "PROBLEM" if not finding.ok else "warn" if finding.warning else "ok"
        head = f"{result:<9}{finding.check:<{check_width}}  "
        lines.extend(_wrapped(finding.message, head, indent))
        if finding.fix:
            lines.extend(_wrapped("fix: " + finding.fix, indent, indent))
    return "\n".join(lines)


def as_json(findings: Sequence[Finding]) -> str:
    return json.dumps(
        {
            "ok": not problems(findings),
            "problems": len(problems(findings)),
            "findings": [f.to_dict() for f in findings],
        },
        indent=2,
    )


def _wrapped(text: str, first: str, rest: str) -> list[str]:
    width = max(_WIDTH, len(first) + 40)
    return textwrap.wrap(text, width=width, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False) or [
        first
    ]
