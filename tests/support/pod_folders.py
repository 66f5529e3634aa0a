"""Folders tests share with process pods: pytest's tmp_path is in /tmp/pytest-of-<user> (mode 0700), where
pods of a root server, each running as a uid of its own, can't enter."""

from __future__ import annotations

import contextlib
import pathlib
import shutil
import tempfile
from typing import Iterator


@contextlib.contextmanager
def folder_pods_can_use() -> Iterator[pathlib.Path]:
    """A temporary folder every uid can read and write, removed afterwards."""
    folder = pathlib.Path(tempfile.mkdtemp(prefix="af-pods-"))
    folder.chmod(0o777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def file_pods_share(path: pathlib.Path) -> pathlib.Path:
    """An empty file at `path` that every uid may write: pods of two runs of one job, each its own uid,
    append to it."""
    path.touch()
    path.chmod(0o666)
    return path
