"""The real-Armada tier's groups (tests/conftest.py, REAL_TIER_GROUPS) name real test files: a typo would select
nothing, and a group that selects nothing passes with no test run."""

from __future__ import annotations

import pathlib
import re

import pytest

from conftest import REAL_TIER_GROUPS, TESTS, real_tier_group

pytestmark = pytest.mark.pure

ROOT = TESTS.parent


@pytest.mark.parametrize("group, place", [(g, p) for g, places in REAL_TIER_GROUPS.items() for p in places])
def test_every_place_of_a_group_exists(group, place):
    assert (TESTS / place).exists(), f"{group} names tests/{place}, which is not there"


@pytest.mark.parametrize("group", sorted(REAL_TIER_GROUPS))
def test_every_group_holds_test_files_of_its_own(group):
    owned = [path for path in TESTS.rglob("test_*.py") if real_tier_group(path) == group]
    assert owned, f"{group} takes no test file (an earlier group takes them all?)"


def test_the_test_script_runs_every_group_and_registers_them_as_markers():
    """Its first wave (on beds with our executor) and its second, on beds with Kubernetes (`GROUP@kubernetes`)."""
    script = (ROOT / "scripts" / "test.sh").read_text()
    first = re.findall(r"\bgroups=\(([^)]*)\)", script)[0].split()
    added = re.findall(r"kubernetes_groups=\((\w[^)]*)\)", script)[0].split()
    assert {entry.split("@")[0] for entry in [*first, *added]} == set(REAL_TIER_GROUPS)
    assert {entry for entry in added if "@" in entry} == set(added), "a group added to the tier names its bed"
    markers = (ROOT / "pyproject.toml").read_text()
    assert all(f'"{group}: ' in markers for group in REAL_TIER_GROUPS)


def test_a_file_takes_the_first_group_that_names_it():
    assert real_tier_group(TESTS / "real_armada" / "test_faults_of_armadas_parts.py") == "faults_of_armadas_parts"
    assert real_tier_group(TESTS / "real_armada" / "test_bed.py") == "faults"
    assert real_tier_group(pathlib.Path("/elsewhere/test_x.py")) is None
