"""`--hogs N`: N processes that spin on the CPU for the whole run, so a figure can be taken beside them, as
on a shared machine (issue 33: quiet and beside CPU hogs)."""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
from typing import Iterator


def add_hogs_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hogs", type=int, default=0, metavar="N", help="busy processes running beside the benchmark")


def _spin() -> None:
    while True:
        pass


@contextlib.contextmanager
def cpu_hogs(count: int) -> Iterator[None]:
    """`count` spinning processes while the block runs; killed after."""
    hogs = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(count)]
    for hog in hogs:
        hog.start()
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.join(10)
