"""The docs' runnable snippets run as a reader runs them: the package installed from its wheel into a virtualenv
of its own, each snippet saved in a folder of its own (not the repository's), `python FILE` there, with no
settings of ours in the environment; a snippet marked `with=dev` runs beside that virtualenv's `armada-flyte
dev`, with the `export` lines it printed (tests/support/doc_snippets.py)."""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import signal
import site
import subprocess
import sys
from typing import Iterator

import pytest

from support.doc_snippets import ROOT, all_snippets, files_for, runnable
from support.process_output import Output

pytestmark = [pytest.mark.e2e, pytest.mark.embedded_only]

RUNNABLE = runnable()


COMMANDS = """
import importlib.metadata, pathlib, sys
folder = pathlib.Path(sys.executable).parent
for point in importlib.metadata.entry_points(group="console_scripts"):
    script = folder / point.name
    if script.exists():
        continue
    module, _, name = point.value.partition(":")
    script.write_text(
        f"#!{sys.executable}\\nimport importlib, sys\\ntarget = importlib.import_module({module!r})\\n"
        f"for part in {name.strip()!r}.split('.'):\\n    target = getattr(target, part)\\nsys.exit(target())\\n"
    )
    script.chmod(0o755)
"""
"""Writes the dependencies' commands (a0, which each pod runs, among them) as pip would have installed them."""


@pytest.fixture(scope="module")
def reader_bin(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The bin folder of a virtualenv holding the package as `pip install` of its wheel leaves it (console script,
    package data), not the checkout's editable install. Its dependencies are this virtualenv's, seen through a
    .pth line (whose own .pth files, the editable install's among them, are not read), so nothing is downloaded;
    their commands are written into it as pip would."""
    root = tmp_path_factory.mktemp("reader")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    build = [*pip, "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(root / "wheel"), str(ROOT)]
    subprocess.run(build, check=True, timeout=300)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True, timeout=120)
    python = str(root / "venv" / "bin" / "python")

    def ask(code: str) -> str:
        return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True, timeout=120).stdout

    own_site = ask("import site; print(site.getsitepackages()[0])").strip()
    pathlib.Path(own_site, "zz-dependencies.pth").write_text(site.getsitepackages()[0] + "\n")
    (wheel,) = (root / "wheel").glob("armada_flyte-*.whl")
    subprocess.run([*pip, "--python", python, "install", "--quiet", "--no-deps", str(wheel)], check=True, timeout=300)
    ask(COMMANDS)
    found = ask("import armada_flyte; print(armada_flyte.__file__)")
    assert found.startswith(str(root / "venv")), f"the package came from {found}"
    return pathlib.Path(python).parent


def reader_environment(home: pathlib.Path, bin_folder: pathlib.Path) -> dict[str, str]:
    """This process's environment without any setting of ours or Flyte's, a home of its own, and the reader's
    virtualenv first on PATH (as after activating it)."""
    ours = re.compile(r"^(ARMADA_|FLYTE_|AWS_|KUBECONFIG$|PYTHONPATH$|VIRTUAL_ENV$)")
    env = {name: value for name, value in os.environ.items() if not ours.match(name)}
    path = f"{bin_folder}{os.pathsep}{env.get('PATH', '')}"
    env.update(HOME=str(home), PATH=path, VIRTUAL_ENV=str(bin_folder.parent), PYTHONUNBUFFERED="1", COLUMNS="200")
    return env


@contextlib.contextmanager
def armada_flyte_dev(bin_folder: pathlib.Path, env: dict[str, str], log: pathlib.Path) -> Iterator[dict[str, str]]:
    """`armada-flyte dev` (ephemeral, on free ports); yields the variables its `export` lines set."""
    process = subprocess.Popen(
        [str(bin_folder / "armada-flyte"), "dev", "--ephemeral", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    output = Output(process)
    try:
        output.wait_for(r"Press Ctrl-C to stop", timeout=180)  # a loaded machine starts it slowly
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
def test_runnable_snippet_runs_as_written_from_a_folder_of_its_own(snippet, reader_bin, tmp_path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    for name, source in files_for(snippet).items():
        (folder / name).write_text(source)
    home = tmp_path / "home"
    home.mkdir()
    env = reader_environment(home, reader_bin)
    dev = armada_flyte_dev(reader_bin, env, tmp_path / "dev.log") if snippet.with_dev else contextlib.nullcontext({})
    with dev as exports:
        done = subprocess.run(
            [str(reader_bin / "python"), snippet.file],
            cwd=folder,
            env={**env, **exports},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=400,
        )
    assert done.returncode == 0, f"{snippet.where} exited {done.returncode}:\n{done.stdout}"
    # the run's last word: its job set, and where to look (beside dev: the view dev serves)
    (said,) = [line for line in done.stdout.splitlines() if line.startswith("Armada job set flyte-")]
    if snippet.with_dev:
        assert re.search(r": see the jobs in the view at http://127\.0\.0\.1:\d+/$", said), said


SHELL = [s for s in all_snippets() if s.lang in ("bash", "sh")]


@pytest.mark.parametrize("snippet", SHELL, ids=[s.where for s in SHELL])
def test_shell_block_parses(snippet) -> None:
    done = subprocess.run(["bash", "-n"], input=snippet.source, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, f"{snippet.where}: {done.stderr}"
