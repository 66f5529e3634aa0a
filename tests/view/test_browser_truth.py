"""The view tells the truth about a real local run (issue 32), in Debian's headless Chromium: a task that raised
reads FAILED (Armada says SUCCEEDED: a0 exits 0), with Armada's state beside it and its bar marked, and a task
that spilled from arm64 to amd64 has its cancelled job linked to the job that took its place, both ways."""

from __future__ import annotations

import pathlib
import sys
from typing import Iterator

import pytest

from armada_flyte.view.pages import STATE_COLOURS

from support.chromium import run_chromium
from support.html_elements import Elements
from support.png import colour_bands, read_png
from support.pod_folders import folder_pods_can_use

pytestmark = pytest.mark.embedded_only

PROJECT = pathlib.Path(__file__).parent / "project"


@pytest.fixture(scope="module")
def viewed() -> Iterator[dict]:
    """The run, through the connector into the local stack, and the stack's view of it. The run's pods hold on
    files in a folder they share with the test (process pods of a root server each run as a uid of their own)."""
    import flyte

    import armada_flyte
    from armada_flyte.local.stack import local_stack, stack_view

    with folder_pods_can_use() as folder, local_stack(configure_connector=False) as stack:
        armada_flyte.configure(
            **stack.connector_settings(), queued_report_after_seconds=0, queued_report_refresh_seconds=0.5
        )
        sys.path.insert(0, str(PROJECT))
        try:
            import outcomes

            stack.init_flyte(PROJECT)
            run = flyte.with_runcontext(mode="local", raw_data_path=stack.raw_data_path).run(
                outcomes.scenario, folder=str(folder)
            )
            said = run.outputs()
            said = said[0] if isinstance(said, tuple) else said
        finally:
            sys.path.remove(str(PROJECT))
        with stack_view(stack) as url:
            yield {"url": url, "said": said}


def _chromium(chromium: str, profile: pathlib.Path, *args: str) -> str:
    return run_chromium(chromium, profile, *args).stdout


def _rows(page: Elements) -> dict[str, dict[str, str]]:
    return {row["data-job-id"]: row for row in page.with_class("job")}


def test_the_run_raised_and_spilled_as_planned(viewed):
    assert viewed["said"].startswith("RuntimeUserError: task outcomes.raises failed: ValueError: raised on purpose")
    assert viewed["said"].endswith("prefers=2")


def test_a_task_that_raised_reads_failed_with_armadas_succeeded_beside_it(viewed, chromium, tmp_path):
    page = Elements(_chromium(chromium, tmp_path / "profile", "--dump-dom", viewed["url"]))
    (raised,) = [row for row in _rows(page).values() if row["data-outcome"] == "FAILED ValueError"]
    assert raised["data-state"] == "SUCCEEDED"
    (bar,) = [bar for bar in page.with_class("bar") if bar["data-job-id"] == raised["data-job-id"]]
    assert bar["data-failed"] == "true" and "failed" in bar["class"].split()
    errors = [row for row in page.with_class("job-error") if row["data-job-id"] == raised["data-job-id"]]
    assert errors, "the task's error has a row under its job"


def test_the_screenshot_shows_a_failed_badge_for_it(viewed, chromium, tmp_path):
    shot = tmp_path / "view.png"
    _chromium(chromium, tmp_path / "profile", f"--screenshot={shot}", viewed["url"])
    image = read_png(shot.read_bytes())
    assert colour_bands(image, STATE_COLOURS["FAILED"]), f"no FAILED badge on the screenshot {shot}"


def test_a_spilled_job_is_linked_to_the_job_that_took_its_place(viewed, chromium, tmp_path):
    dom = _chromium(chromium, tmp_path / "profile", "--dump-dom", viewed["url"])
    rows = _rows(Elements(dom))
    (spilled,) = [row for row in rows.values() if row["data-spilled-to"]]
    successor = rows[spilled["data-spilled-to"]]
    assert spilled["data-state"] == "CANCELLED" and spilled["data-architecture"] == "arm64"
    assert successor["data-spilled-from"] == spilled["data-job-id"] and successor["data-node"].startswith("amd64-")
    assert f'spilled: moved to <a href="/jobs/{successor["data-job-id"]}">' in dom
    (bar,) = Elements(dom).with_class("spilled")
    assert bar["data-job-id"] == successor["data-job-id"] and bar["data-spilled-from"] == spilled["data-job-id"]


def test_the_spilled_jobs_own_page_links_to_its_successor(viewed, chromium, tmp_path):
    dom = _chromium(chromium, tmp_path / "profile", "--dump-dom", viewed["url"])
    (spilled,) = [row for row in _rows(Elements(dom)).values() if row["data-spilled-to"]]
    job_page = _chromium(chromium, tmp_path / "profile2", "--dump-dom", f"{viewed['url']}jobs/{spilled['data-job-id']}")
    assert f'spilled: moved to <a href="/jobs/{spilled["data-spilled-to"]}">' in job_page


def test_the_run_has_one_timeline_across_its_job_sets(viewed, chromium, tmp_path):
    sections = Elements(_chromium(chromium, tmp_path / "profile", "--dump-dom", viewed["url"])).with_class(
        "run-timeline"
    )
    (run,) = [s for s in sections if s["data-run"]]
    assert "-prefer-" in run["data-job-sets"] and run["data-job-sets"].count(",") >= 1
