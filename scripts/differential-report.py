#!/usr/bin/env python3
"""The differential report: the conformance suite and Armada's own cases on the embedded server and on
real Armada, side by side, written as a Markdown table (case, embedded, real, cause).

    .venv/bin/python scripts/differential-report.py [--folders basic queue ...] [--out docs/differential.md]

It runs `pytest tests/embedded` twice, once per server, with a JUnit report each: the conformance suite
and tests/embedded/test_armadas_own_tests.py (Armada's testsuite cases, its e2e armadactl tests, the
Python client's examples and integration tests), whose tests record each case's own outcome and, where
a case must fail, why. Real Armada is ARMADA_URL when set (a bed already up), else the suite's own bed
(scripts/real-armada.sh up with our executor, on ports it finds free). Every difference
needs a cause, found in the reports: the reason a test skips or is an xfail on one server
(`embedded_only`, DIFFERS_ON_REAL_ARMADA in tests/support/real_armada.py), or the pinned reason of an
Armada case. A difference without one is listed as UNEXPLAINED and the script exits 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import pathlib
import signal
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from typing import Iterable, Optional

ROOT = pathlib.Path(__file__).resolve().parents[1]
OWN_TESTS = "test_armadas_own_tests"
UNEXPLAINED = "UNEXPLAINED"


@dataclasses.dataclass(frozen=True)
class Outcome:
    """One case on one server: passed, failed, skipped or xfailed (a pinned failure), and why when known."""

    result: str
    why: str = ""
    detail: str = ""
    """What a failure said; a failure is no cause (it must be fixed, or pinned with its reason)."""


@dataclasses.dataclass(frozen=True)
class Row:
    case: str
    embedded: Outcome
    real: Outcome

    @property
    def same(self) -> bool:
        return self.embedded.result == self.real.result

    @property
    def cause(self) -> str:
        """Why the servers differ: the reason the real side gives, else the embedded side's."""
        if self.same:
            return ""
        return self.real.why or self.embedded.why or UNEXPLAINED


def _properties(case: ElementTree.Element) -> dict[str, str]:
    return {prop.get("name", ""): prop.get("value", "") for prop in case.iter("property")}


def _case_name(case: ElementTree.Element) -> str:
    module = (case.get("classname") or "").rsplit(".", 1)[-1]
    return f"{module}::{case.get('name')}"


def outcome_of(case: ElementTree.Element) -> Outcome:
    """A JUnit testcase's outcome; for Armada's own cases, the case's own outcome that the test recorded."""
    properties = _properties(case)
    skipped = case.find("skipped")
    if "armada_case_outcome" in properties:
        return Outcome(properties["armada_case_outcome"], properties.get("armada_case_why", ""))
    if skipped is not None:
        message = skipped.get("message") or ""
        if skipped.get("type") == "pytest.xfail" or message.startswith("xfail"):
            return Outcome("failed", message.removeprefix("xfail").strip(" :"))
        return Outcome("skipped", message.removeprefix("Skipped:").strip())
    for kind in ("failure", "error"):
        found = case.find(kind)
        if found is not None:
            return Outcome("failed" if kind == "failure" else "error", detail=(found.get("message") or kind)[:200])
    return Outcome("passed")


def read_report(path: pathlib.Path) -> dict[str, Outcome]:
    return {_case_name(case): outcome_of(case) for case in ElementTree.parse(path).iter("testcase")}


def compare(embedded: dict[str, Outcome], real: dict[str, Outcome]) -> list[Row]:
    missing = Outcome("not run")
    names = sorted(set(embedded) | set(real))
    return [Row(name, embedded.get(name, missing), real.get(name, missing)) for name in names]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _label(case: str) -> str:
    module, _, test = case.partition("::")
    if module == OWN_TESTS:
        kind, _, param = test.partition("[")
        return f"Armada: {kind.removeprefix('test_armadas_')} {param.rstrip(']')}".strip()
    return case


def _cause_cell(row: Row) -> str:
    if row.cause != UNEXPLAINED:
        return row.cause
    said = row.real.detail or row.embedded.detail
    return f"{UNEXPLAINED}: {said}" if said else UNEXPLAINED


def render(rows: list[Row], heading: str) -> str:
    """The Markdown page: counts, then every difference with its cause, then the cases that agree."""
    different = [row for row in rows if not row.same]
    unexplained = [row for row in different if row.cause == UNEXPLAINED]
    not_applicable = [row for row in different if row.real.result == "skipped"]
    lines = [
        "# Differential report: the embedded server and real Armada",
        "",
        heading,
        "",
        f"{len(rows)} cases: {len(rows) - len(different)} the same on both, {len(different)} different "
        f"({len(not_applicable)} of them not run on real Armada, each with its reason), "
        f"{len(different) - len(unexplained)} of the differences explained, {len(unexplained)} unexplained.",
        "",
        "## Differences",
        "",
        "| case | embedded | real | cause |",
        "| --- | --- | --- | --- |",
    ]
    lines += [
        f"| {_cell(_label(row.case))} | {row.embedded.result} | {row.real.result} | {_cell(_cause_cell(row))} |"
        for row in different
    ]
    lines += ["", "## The same on both", "", "| case | embedded | real |", "| --- | --- | --- |"]
    lines += [f"| {_cell(_label(row.case))} | {row.embedded.result} | {row.real.result} |" for row in rows if row.same]
    return "\n".join(lines) + "\n"


def _pytest(real_url: Optional[str], report: pathlib.Path, folders: Iterable[str], log: pathlib.Path):
    """Start `pytest tests/embedded` against one server; JUnit xunit1 keeps the recorded properties."""
    env = {**os.environ, "ARMADA_TESTSUITE_FOLDERS": " ".join(folders)}
    env.pop("ARMADA_URL", None)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1"]
    command += [f"--junitxml={report}", "tests/embedded"]
    if real_url:
        env["ARMADA_URL"] = real_url
        command.append("--armada=real")
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, preexec_fn=_default_signals
    )


def _default_signals() -> None:
    """A shell's background job ignores SIGINT and SIGQUIT, and pods inherit that; the suite checks they don't."""
    for signum in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_DFL)


def run_both(real_url: str, folders: list[str], out: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """Run the suite on both servers, one after the other (the Armada cases and the conformance suite each
    fill the nodes), and return the two JUnit reports."""
    reports = out / "embedded.xml", out / "real.xml"
    for url, report in zip(("", real_url), reports):
        name = report.stem
        print(f"differential-report: pytest tests/embedded on {name} (log: {out / name}.log)", file=sys.stderr)
        _pytest(url or None, report, folders, out / f"{name}.log").wait()
        if not report.exists():
            raise SystemExit(f"differential-report: pytest wrote no report for {name}; see {out / name}.log")
    return reports


def _bed_url() -> tuple[str, bool]:
    """ARMADA_URL, or a bed of our own (started here; the caller stops it)."""
    if os.environ.get("ARMADA_URL"):
        return os.environ["ARMADA_URL"], False
    up = subprocess.run([str(ROOT / "scripts" / "real-armada.sh"), "up"], capture_output=True, text=True)
    if up.returncode != 0:
        raise SystemExit(f"differential-report: real Armada did not come up:\n{up.stderr[-3000:]}")
    found = dict(line.split("=", 1) for line in up.stdout.splitlines() if "=" in line)
    return found["ARMADA_URL"].strip("'"), True


KEPT_MARK = "<!-- written by hand: scripts/differential-report.py keeps what follows -->"
"""The report's tables are rewritten each run; the sections after this line (the production path on a third
judge, real Armada's own executor on Kubernetes) are kept as they are."""


def kept_tail(path: pathlib.Path) -> str:
    """The hand-written part of the report at `path`, from KEPT_MARK on ("" when there is none)."""
    text = path.read_text() if path.exists() else ""
    start = text.find(KEPT_MARK)
    return text[start:] if start >= 0 else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folders", nargs="*", default=[], help="the testsuite folders to run (default: all)")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "docs" / "differential.md")
    parser.add_argument("--work", type=pathlib.Path, help="where the JUnit reports and logs go (default: a temp dir)")
    parser.add_argument("--from-reports", nargs=2, type=pathlib.Path, metavar=("EMBEDDED", "REAL"))
    parser.add_argument("--note", default="", help="a sentence for the heading (what was left out, and why)")
    args = parser.parse_args()
    if args.from_reports:
        reports = tuple(args.from_reports)
    else:
        work = args.work or pathlib.Path(subprocess.check_output(["mktemp", "-d"], text=True).strip())
        work.mkdir(parents=True, exist_ok=True)
        url, started = _bed_url()
        try:
            reports = run_both(url, args.folders, work)
        finally:
            if started:
                subprocess.run([str(ROOT / "scripts" / "real-armada.sh"), "down"], check=False)
    rows = compare(read_report(reports[0]), read_report(reports[1]))
    folders = ", ".join(args.folders) if args.folders else "all folders"
    heading = (
        f"Written by `scripts/differential-report.py` on {datetime.date.today()}: `pytest tests/embedded` (the "
        f"conformance suite and `test_armadas_own_tests.py`; Armada's testsuite: {folders}) against the embedded "
        "server and against real Armada v0.22.7 (`scripts/real-armada.sh` with `armada-flyte executor`). " + args.note
    ).strip()
    kept = kept_tail(args.out)
    args.out.write_text(render(rows, heading) + (f"\n{kept}" if kept else ""))
    unexplained = [row.case for row in rows if row.cause == UNEXPLAINED]
    print(f"differential-report: wrote {args.out}; unexplained: {len(unexplained)}", file=sys.stderr)
    for case in unexplained:
        print(f"  {case}", file=sys.stderr)
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
