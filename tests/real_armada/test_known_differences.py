"""The lists of what real Armada does otherwise name tests that exist (a renamed test would drop out silently)."""

from __future__ import annotations

import ast
import pathlib

import pytest

from support import real_armada

pytestmark = pytest.mark.pure

SUITE = pathlib.Path(__file__).resolve().parents[1] / "embedded"


def _tests_in(file: str) -> set[str]:
    tree = ast.parse((SUITE / file).read_text())
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


@pytest.mark.parametrize(
    "listed",
    sorted(
        {
            **real_armada.DIFFERS_ON_REAL_ARMADA,
            **real_armada.DIFFERS_SOMETIMES_ON_REAL_ARMADA,
            **real_armada.NEEDS_PODS_THAT_RUN,
            **real_armada.RACES_THE_FAKE_EXECUTOR,
        }
    ),
)
def test_each_listed_test_exists_in_the_conformance_suite(listed: str) -> None:
    file, _, name = listed.partition("::")
    assert name.split("[", 1)[0] in _tests_in(file), f"{listed} names no test of tests/embedded/{file}"
