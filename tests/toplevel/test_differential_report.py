"""scripts/differential-report.py: how two JUnit reports become the table, and what counts as explained."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import xml.etree.ElementTree as ElementTree

import pytest

pytestmark = pytest.mark.pure

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "differential-report.py"
_spec = importlib.util.spec_from_file_location("differential_report", SCRIPT)
report = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = report  # its dataclasses look their module up
_spec.loader.exec_module(report)


def _cases(xml: str) -> dict:
    root = ElementTree.fromstring(f"<testsuites><testsuite>{xml}</testsuite></testsuites>")
    return {report._case_name(case): report.outcome_of(case) for case in root.iter("testcase")}


PASSED = '<testcase classname="tests.embedded.test_cancel" name="{name}"/>'


def test_a_strict_xfail_on_real_armada_is_a_difference_explained_by_its_cause():
    embedded = _cases(PASSED.format(name="test_x"))
    real = _cases(
        '<testcase classname="tests.embedded.test_cancel" name="test_x">'
        '<skipped type="pytest.xfail" message="differs on real Armada: v0.22.7 words it otherwise"/></testcase>'
    )
    [row] = report.compare(embedded, real)
    assert (row.embedded.result, row.real.result) == ("passed", "failed")
    assert row.cause == "differs on real Armada: v0.22.7 words it otherwise"


def test_a_plain_failure_is_unexplained_and_shows_what_it_said():
    embedded = _cases(PASSED.format(name="test_y"))
    real = _cases(
        '<testcase classname="tests.embedded.test_cancel" name="test_y">'
        '<failure message="AssertionError: assert 1 == 2">trace</failure></testcase>'
    )
    [row] = report.compare(embedded, real)
    assert row.cause == report.UNEXPLAINED
    assert "UNEXPLAINED: AssertionError: assert 1 == 2" in report.render([row], "heading")


def test_armadas_own_cases_are_compared_by_the_outcome_their_test_recorded():
    recorded = (
        '<testcase classname="tests.embedded.test_armadas_own_tests" name="test_armadas_testsuite_case[node/n]">'
        "<properties>"
        '<property name="armada_case_outcome" value="{outcome}"/>{why}'
        "</properties></testcase>"
    )
    embedded = _cases(recorded.format(outcome="passed", why=""))
    real = _cases(recorded.format(outcome="failed", why='<property name="armada_case_why" value="no kube API"/>'))
    [row] = report.compare(embedded, real)
    assert (row.embedded.result, row.real.result, row.cause) == ("passed", "failed", "no kube API")
    assert "| Armada: testsuite_case node/n | passed | failed | no kube API |" in report.render([row], "h")


def test_the_counts_say_how_many_agree_differ_and_are_explained():
    embedded = _cases(PASSED.format(name="a") + PASSED.format(name="b"))
    real = _cases(
        PASSED.format(name="a")
        + '<testcase classname="tests.embedded.test_cancel" name="b"><skipped message="needs the embedded server"/>'
        "</testcase>"
    )
    page = report.render(report.compare(embedded, real), "h")
    assert "2 cases: 1 the same on both, 1 different (1 of them not run on real Armada" in page
    assert "1 of the differences explained, 0 unexplained" in page
