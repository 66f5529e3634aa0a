"""No module in src/ runs over 450 lines unless its docstring says why ("over N lines: ...", as
`pod_runner/pod_shim.py` does): a long module is a choice to explain, not a drift to notice late."""

from __future__ import annotations

import ast
import re

import pytest

from support.import_graph import MODULES

pytestmark = pytest.mark.pure

MAX_LINES = 450
_SAYS_WHY = re.compile(r"over (\d+) lines\b[^.]*?:", re.IGNORECASE)
"""The docstring's reason: "over N lines" and, after a colon in the same sentence, why."""


def _generated(name: str) -> bool:
    return name.endswith("_pb2") or name.endswith("_pb2_grpc")


def long_modules_without_a_reason(sources: dict[str, str], max_lines: int = MAX_LINES) -> list[str]:
    """The modules over `max_lines` whose docstring doesn't say why (or claims more lines than they have)."""
    found = []
    for name, text in sorted(sources.items()):
        lines = len(text.splitlines())
        if lines <= max_lines:
            continue
        reason = _SAYS_WHY.search(ast.get_docstring(ast.parse(text)) or "")
        if reason is None or int(reason.group(1)) >= lines:
            found.append(f"{name}: {lines} lines")
    return found


def test_every_long_module_says_why_in_its_docstring():
    sources = {name: path.read_text() for name, path in MODULES.items() if not _generated(name)}
    missing = long_modules_without_a_reason(sources)
    assert not missing, (
        f"over {MAX_LINES} lines without a reason: {missing}; split the module, or add a docstring line "
        "'... over N lines: <why it stays one module>'"
    )


@pytest.mark.parametrize(
    "docstring, flagged",
    [
        ("A module.", True),
        ("A module, one file of over 400 lines: it can import no module of this package.", False),
        ("Just over 400 lines: the followers share one table.", False),
        ("Over 900 lines: more than it has.", True),  # the reason must not overstate
        ("It is over 400 lines long.", True),  # says that, not why
    ],
)
def test_the_rule_wants_a_reason_not_a_remark(docstring, flagged):
    source = f'"""{docstring}"""\n' + "x = 1\n" * 500
    assert bool(long_modules_without_a_reason({"m": source})) is flagged
    assert long_modules_without_a_reason({"m": '"""Short."""\n'}) == []
