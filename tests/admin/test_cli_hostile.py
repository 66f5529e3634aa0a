"""`armada-flyte` with generated arguments: it exits with our typed error's message (1), a finding
(doctor), or argparse's usage error (2); never a traceback. Targets stay on 127.0.0.1."""

from __future__ import annotations

import pathlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from armada_flyte.admin.cli import main

from support.hostile_values import MAX_MESSAGE, alias_bomb, awkward_text


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> pathlib.Path:
    root = tmp_path_factory.mktemp("project")
    (root / "broken_mod.py").write_text("raise RuntimeError('import-time failure')\n")
    (root / "syntax_mod.py").write_text("def (:\n")
    (root / "plain_mod.py").write_text("x = 1\n")
    (root / "bomb.yaml").write_text(alias_bomb())
    (root / "deep.yaml").write_text("a: " + "[" * 10_000)
    (root / "binary.yaml").write_bytes(b"\xff\xfe\x00")
    (root / "list.yaml").write_text("- a\n")
    return root


_text = awkward_text.filter(lambda t: "\x00" not in t and not t.startswith("-"))
_files = st.sampled_from(["bomb.yaml", "deep.yaml", "binary.yaml", "list.yaml", "missing.yaml", "."])
_modules = st.sampled_from(["broken_mod", "syntax_mod", "plain_mod", "no_such_mod", "bad..name", "", "plain_mod.x"])


def _argv(project: pathlib.Path):
    path = _files.map(lambda name: str(project / name))
    doctor = st.lists(
        st.one_of(
            st.tuples(st.just("--node-groups"), path),
            st.tuples(st.just("--preset"), _text),
            st.tuples(st.just("--executor-config"), path),
            st.tuples(st.just("--scheduler-config"), path),
            st.tuples(st.just("--queue"), _text),
            st.tuples(st.just("--runtime-platforms"), _text),
            st.tuples(st.just("--runtime-image"), _text.map(lambda t: f"127.0.0.1:1/{t}")),
            st.tuples(st.just("--armada-url"), st.just("127.0.0.1:1")),
            st.tuples(st.just("--json")),
        ),
        max_size=3,
    ).map(lambda parts: ["doctor", *[item for part in parts for item in part]])
    dry_run = st.tuples(_modules, _text).map(lambda mt: ["dry-run", f"{mt[0]}:{mt[1]}", "--root", str(project)])
    dry_run_groups = st.tuples(path, _text).map(
        lambda pt: ["dry-run", f"plain_mod:{pt[1]}", "--root", str(project), "--node-groups", pt[0]]
    )
    inspect = _text.map(lambda t: ["image", "inspect", f"127.0.0.1:1/{t}"])
    noise = st.lists(_text, max_size=3)
    return st.one_of(doctor, dry_run, dry_run_groups, inspect, noise)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_generated_command_lines_end_in_a_typed_error_or_usage(project, capsys, monkeypatch, data):
    monkeypatch.setenv("ARMADA_FLYTE_GRPC_RETRIES", "0")
    argv = data.draw(_argv(project))
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse: usage error (2) or --help (0)
        assert exc.code in (0, 2)
    else:
        assert code in (0, 1, 2)
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    for line in out.err.splitlines():
        assert len(line) < MAX_MESSAGE


@pytest.mark.pure
@pytest.mark.parametrize(
    "task, problem",
    [
        ("no_such_mod:train", "no module 'no_such_mod'"),
        ("broken_mod:train", "importing broken_mod failed: RuntimeError: import-time failure"),
        ("syntax_mod:train", "importing syntax_mod failed: SyntaxError"),
        ("plain_mod:train", "has no Flyte task named train"),
        ("bad..name:train", "name it as module:task"),
        ("plain_mod:", "name it as module:task"),
    ],
)
def test_dry_run_with_a_bad_module_or_task_says_which(project, capsys, task, problem):
    assert main(["dry-run", task, "--root", str(project), "--preset", "embedded"]) == 1
    assert problem in capsys.readouterr().err
