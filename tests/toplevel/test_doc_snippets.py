"""Every code block of the README and docs/ is valid as written: Python compiles, TOML, YAML and JSON
parse; the runnable ones (run in tests/e2e/test_doc_snippets.py) are complete files."""

from __future__ import annotations

import ast
import json

import pytest
import tomllib
import yaml

from support.doc_snippets import all_snippets, files_for, runnable

pytestmark = pytest.mark.pure

SNIPPETS = all_snippets()


def _ids(snippets):
    return [s.where for s in snippets]


PYTHON = [s for s in SNIPPETS if s.lang == "python"]


@pytest.mark.parametrize("snippet", PYTHON, ids=_ids(PYTHON))
def test_python_block_compiles(snippet) -> None:
    try:
        compile(snippet.source, snippet.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError as exc:
        pytest.fail(f"{snippet.where}: the Python block does not compile: {exc}")


DATA = [s for s in SNIPPETS if s.lang in ("toml", "yaml", "json")]
PARSERS = {"toml": tomllib.loads, "yaml": lambda text: list(yaml.safe_load_all(text)), "json": json.loads}


@pytest.mark.parametrize("snippet", DATA, ids=_ids(DATA))
def test_data_block_parses(snippet) -> None:
    try:
        PARSERS[snippet.lang](snippet.source)
    except (tomllib.TOMLDecodeError, yaml.YAMLError, json.JSONDecodeError) as exc:
        pytest.fail(f"{snippet.where}: the {snippet.lang} block does not parse: {exc}")


def test_the_documented_ways_to_start_a_local_run_are_run_by_the_tests() -> None:
    """The task authors' guide's two ways (the local stack, and `armada-flyte dev`) are marked runnable,
    so a change that breaks either fails the main tier."""
    guide = [s for s in runnable() if s.doc.name == "task-authors.md"]
    assert any("local_stack()" in s.source and not s.with_dev for s in guide)
    assert any(s.with_dev and 'flyte.init(root_dir="."' in s.source for s in guide)


RUNNABLE = runnable()


@pytest.mark.parametrize("snippet", RUNNABLE, ids=_ids(RUNNABLE))
def test_runnable_block_is_a_complete_python_file(snippet) -> None:
    """A runnable block names its file, holds no `...` placeholder, and finds every block it uses."""
    assert snippet.lang == "python" and snippet.file.endswith(".py"), snippet.where
    tree = ast.parse(snippet.source)
    placeholders = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value is Ellipsis]
    assert not placeholders, f"{snippet.where}: `...` on lines {placeholders} of the block"
    files_for(snippet)
