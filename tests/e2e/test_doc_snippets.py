"""The docs' runnable snippets run as a reader runs them: each saved in a folder of its own (not the
repository's), `python FILE` there, with no settings of ours in the environment; a snippet marked
`with=dev` runs beside `armada-flyte dev`, with the `export` lines it printed (tests/support/doc_snippets.py)."""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import signal
import subprocess
import sys
from typing import Iterator

import pytest

from support.doc_snippets import all_snippets, files_for, runnable
from support.process_output import Output

pytestmark = [pytest.mark.e2e, pytest.mark.embedded_only]

RUNNABLE = runnable()
BIN = pathlib.Path(sys.executable).parent


def reader_environment(home: pathlib.Path) -> dict[str, str]:
    """This process's environment without any setting of ours or Flyte's, a home of its own, and the venv's
    commands first on PATH (as after `pip install` in an activated virtualenv)."""
    ours = re.compile(r"^(ARMADA_|FLYTE_|AWS_|KUBECONFIG$|PYTHONPATH$)")
    env = {name: value for name, value in os.environ.items() if not ours.match(name)}
    env.update(HOME=str(home), PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", PYTHONUNBUFFERED="1", COLUMNS="200")
    return env


@contextlib.contextmanager
def armada_flyte_dev(env: dict[str, str], log: pathlib.Path) -> Iterator[dict[str, str]]:
    """`armada-flyte dev` (ephemeral, on free ports); yields the variables its `export` lines set."""
    script = BIN / "armada-flyte"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "armada_flyte.admin.cli"]
    process = subprocess.Popen(
        [*command, "dev", "--ephemeral", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    output = Output(process)
    try:
        output.wait_for(r"Press Ctrl-C to stop")
        exports = [line.strip()[len("export ") :] for line in output.lines if line.strip().startswith("export ")]
        yield dict(pair.split("=", 1) for line in exports for pair in line.split())
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.write_text(output.text())


@pytest.mark.parametrize("snippet", RUNNABLE, ids=[s.where for s in RUNNABLE])
def test_runnable_snippet_runs_as_written_from_a_folder_of_its_own(snippet, tmp_path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    for name, source in files_for(snippet).items():
        (folder / name).write_text(source)
    home = tmp_path / "home"
    home.mkdir()
    env = reader_environment(home)
    with armada_flyte_dev(env, tmp_path / "dev.log") if snippet.with_dev else contextlib.nullcontext({}) as exports:
        done = subprocess.run(
            [sys.executable, snippet.file],
            cwd=folder,
            env={**env, **exports},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=400,
        )
    assert done.returncode == 0, f"{snippet.where} exited {done.returncode}:\n{done.stdout}"


SHELL = [s for s in all_snippets() if s.lang in ("bash", "sh")]


@pytest.mark.parametrize("snippet", SHELL, ids=[s.where for s in SHELL])
def test_shell_block_parses(snippet) -> None:
    done = subprocess.run(["bash", "-n"], input=snippet.source, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, f"{snippet.where}: {done.stderr}"
