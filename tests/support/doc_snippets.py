"""The code blocks of the README and docs/, read as a reader copies them, so a doc that drifts fails a test.

A block is marked runnable by an HTML comment on the line just before its fence (invisible on the page):

    <!-- snippet: run file=fanout.py -->            run `python fanout.py` in a folder of its own
    <!-- snippet: run file=go.py with=dev uses=fanout.py -->
                                                    the same beside `armada-flyte dev`, with its exports set,
                                                    and fanout.py (another block of the same doc) beside it

Unmarked Python blocks are compiled (top-level `await` allowed, `...` as a value is Python); TOML,
YAML and JSON blocks are parsed.
"""

from __future__ import annotations

import pathlib
import re
import shlex
from dataclasses import dataclass, field

ROOT = pathlib.Path(__file__).parents[2]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), ROOT / "deploy" / "README.md"])

_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w+-]*)\s*$")
_MARK = re.compile(r"^\s*<!--\s*snippet:(?P<words>.*?)-->\s*$")


@dataclass(frozen=True)
class Snippet:
    doc: pathlib.Path
    line: int
    """The fence's line (1-based), for messages."""
    lang: str
    source: str
    run: bool = False
    file: str = ""
    """The file name a runnable snippet is saved as (its module name, for the tasks in it)."""
    with_dev: bool = False
    uses: tuple[str, ...] = field(default=())
    """Other runnable blocks of the same doc (by file name) saved beside this one."""

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def snippets(doc: pathlib.Path) -> list[Snippet]:
    """Every fenced block of `doc`, with its marker's settings."""
    lines = doc.read_text().splitlines()
    found: list[Snippet] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent = len(opening["indent"])
        body: list[str] = []
        end = index + 1
        while end < len(lines) and not re.match(r"^\s*```\s*$", lines[end]):
            text = lines[end]
            body.append(text[min(indent, len(text) - len(text.lstrip())) :])  # the fence's indent, not the code's
            end += 1
        mark = _MARK.match(lines[index - 1]) if index > 0 else None
        found.append(_snippet(doc, index + 1, opening["lang"].lower(), "\n".join(body) + "\n", mark))
        index = end + 1
    return found


def _snippet(doc: pathlib.Path, line: int, lang: str, source: str, mark: re.Match | None) -> Snippet:
    if mark is None:
        return Snippet(doc, line, lang, source)
    words = shlex.split(mark["words"])
    settings = dict(word.split("=", 1) for word in words if "=" in word)
    unknown = ({w for w in words if "=" not in w} - {"run"}) | (set(settings) - {"file", "with", "uses"})
    if unknown or settings.get("with", "dev") != "dev":
        raise ValueError(f"{doc}:{line}: unknown snippet marker words {sorted(unknown)} in {mark.group(0)!r}")
    uses = tuple(filter(None, settings.get("uses", "").split(",")))
    return Snippet(doc, line, lang, source, "run" in words, settings.get("file", ""), "with" in settings, uses)


def all_snippets() -> list[Snippet]:
    return [snippet for doc in DOCS for snippet in snippets(doc)]


def runnable() -> list[Snippet]:
    return [snippet for snippet in all_snippets() if snippet.run]


def files_for(snippet: Snippet) -> dict[str, str]:
    """The files a runnable snippet's folder holds: itself and the blocks it uses, by name."""
    by_name = {other.file: other for other in snippets(snippet.doc) if other.file}
    missing = [name for name in snippet.uses if name not in by_name]
    if missing:
        raise ValueError(f"{snippet.where}: uses {missing}, which no block of {snippet.doc.name} is saved as")
    return {name: by_name[name].source for name in (*snippet.uses, snippet.file)}
