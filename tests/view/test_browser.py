"""The view in a real browser: Debian's Chromium, headless, on a multi-architecture run of the embedded server.

Jobs are pinned to amd64 and arm64 (two arm64 jobs hold both arm64 nodes, a third waits for
room), the view serves them, Chromium dumps the page's DOM (rows and lanes, structurally) and
takes a screenshot, and the screenshot is checked where it matters: one band of the arm64 colour
per arm64 lane, below the amd64 lanes' bars, reaching the right edge (still running), and the
table's state badges in the rows' order.
"""

from __future__ import annotations

import re
import subprocess
import urllib.request
from collections import defaultdict
from pathlib import Path
from typing import Iterator

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient

from armada_flyte.armada_names import JobState
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.config.settings import resolve_settings
from armada_flyte.embedded import Cluster, EmbeddedArmada, EmbeddedConfig
from armada_flyte.view.http_server import ViewServer, serving
from armada_flyte.view.pages import ARCHITECTURE_COLOURS, STATE_COLOURS

from support.chromium import WINDOW, run_chromium
from support.html_elements import Elements
from support.png import colour_bands, read_png
from support.pod_folders import folder_pods_can_use
from support.pods import ARM64_TOLERATION, cluster, node_set, pod, python
from support.waiting import wait_for_state, wait_until

QUEUE, JOB_SET = "flyte", "multiarch"


def _job(spec, task: str, architecture: str, source: str) -> submit_pb2.JobSubmitRequestItem:
    """A request item carrying the metadata the connector writes (connector/model/job_request.py)."""
    return submit_pb2.JobSubmitRequestItem(
        priority=1,
        namespace="default",
        pod_specs=[spec],
        labels={"armada-flyte.io/architecture": architecture},
        annotations={
            "armada-flyte.io/task": task,
            "armada-flyte.io/architecture-source": source,
            "armada-flyte.io/node-group": architecture,
        },
    )


def _briefly(says: str) -> list[str]:
    """A pod that runs long enough for its bar to be wider than its label's margins, then prints `says`."""
    return python(f"import time; time.sleep(1.5); print({says!r})")


@pytest.fixture(scope="module")
def run() -> Iterator[dict]:
    """prepare and evaluate on amd64, two trains running on arm64 (one per node) and a third queued behind them."""
    with folder_pods_can_use() as folder:
        yield from _run(folder / "go")


def _run(release: Path) -> Iterator[dict]:
    hold = python(f"import os, time\nwhile not os.path.exists({str(release)!r}): time.sleep(0.05)")
    arm64 = {"node_selector": {"kubernetes.io/arch": "arm64"}, "tolerations": [ARM64_TOLERATION], "cpu": "2"}
    amd64 = {"node_selector": {"kubernetes.io/arch": "amd64"}}
    model = Cluster.from_mapping(
        cluster(node_set("amd64", 2, cpu="2"), node_set("arm64", 2, cpu="2", arch="arm64", tainted=True))
    )
    with EmbeddedArmada(EmbeddedConfig(cluster=model, queues=(QUEUE,))) as armada:
        channel = grpc.insecure_channel(armada.url)
        client = ArmadaClient(channel)

        def submit(*items: submit_pb2.JobSubmitRequestItem) -> list[str]:
            return [i.job_id for i in client.submit_jobs(QUEUE, JOB_SET, list(items)).job_response_items]

        (prepare,) = submit(_job(pod(_briefly("prepared"), **amd64), "prepare", "amd64", "platform"))
        wait_for_state(client, prepare, JobState.SUCCEEDED)
        trains = submit(*(_job(pod(hold, **arm64), "train", "arm64", "task") for _ in range(2)))
        for job_id in trains:
            wait_for_state(client, job_id, JobState.RUNNING)
        (waiting,) = submit(_job(pod(hold, **arm64), "train", "arm64", "task"))
        (evaluate,) = submit(_job(pod(_briefly("evaluated"), **amd64), "evaluate", "amd64", "task"))
        wait_for_state(client, evaluate, JobState.SUCCEEDED)
        assert client.get_job_status([waiting]).job_states[waiting] == JobState.QUEUED
        settings = resolve_settings(armada_url=armada.url)
        with serving(settings, lambda: [(QUEUE, JOB_SET)], node_groups=NodeGroups.preset("embedded")) as view:
            yield {"view": view, "prepare": prepare, "trains": trains, "waiting": waiting, "evaluate": evaluate}
        release.touch()
        channel.close()


def _chromium(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return run_chromium(chromium, profile, *args)


def _fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read().decode()


def test_the_screenshot_shows_the_lanes_and_rows_where_they_belong(run, chromium, tmp_path):
    """First of the module's tests: the running bars grow with time, the finished ones narrow."""
    view: ViewServer = run["view"]
    page = Elements(_fetch(view.url))
    shot = tmp_path / "view.png"
    _chromium(chromium, tmp_path / "profile", f"--screenshot={shot}", view.url)
    image = read_png(shot.read_bytes())
    assert (image.width, image.height) == WINDOW

    # Lanes: one arm64 band per arm64 lane, both below every amd64 bar, both running up to the right edge.
    arm64 = colour_bands(image, ARCHITECTURE_COLOURS["arm64"])
    amd64 = colour_bands(image, ARCHITECTURE_COLOURS["amd64"])
    amd64_rows = {(bar_node(page, bar), bar["style"].split("top:")[1].split(";")[0]) for bar in amd64_bars(page)}
    assert len(arm64) == 2, f"arm64 bands {arm64} (screenshot {shot})"
    assert len(amd64) == len(amd64_rows), f"amd64 bands {amd64}, bar rows {amd64_rows} (screenshot {shot})"
    assert max(b.bottom for b in amd64) < min(b.top for b in arm64)
    right_edge = max(b.right for b in arm64 + amd64)
    assert all(right_edge - b.right <= 2 for b in arm64), f"running arm64 bars end at {arm64}"
    assert all(b.right < right_edge - 20 for b in amd64), "finished amd64 bars end before now"
    assert all(b.left < b.right - 50 for b in arm64), "running bars are long"

    # Rows: the state badges, top to bottom, in the table's order.
    badges = sorted(
        (band.top, state)
        for state in ("SUCCEEDED", "RUNNING", "QUEUED")
        for band in colour_bands(image, STATE_COLOURS[state])
        if band.top > max(b.bottom for b in arm64)
    )
    assert [state for _, state in badges] == [r["data-state"] for r in page.with_class("job")], f"screenshot {shot}"


def test_the_page_lists_every_job_and_a_lane_per_node(run, chromium, tmp_path):
    view: ViewServer = run["view"]
    page = Elements(_chromium(chromium, tmp_path / "profile", "--dump-dom", view.url).stdout)
    rows = {r["data-job-id"]: (r["data-state"], r["data-architecture"]) for r in page.with_class("job")}
    assert rows == {
        run["prepare"]: ("SUCCEEDED", "amd64"),
        run["trains"][0]: ("RUNNING", "arm64"),
        run["trains"][1]: ("RUNNING", "arm64"),
        run["waiting"]: ("QUEUED", "arm64"),
        run["evaluate"]: ("SUCCEEDED", "amd64"),
    }
    lanes = [(lane["data-node"], lane["data-architecture"]) for lane in page.with_class("lane")]
    arm64_lanes = [node for node, arch in lanes if arch == "arm64"]
    assert arm64_lanes == ["arm64-0", "arm64-1"]
    assert [arch for _, arch in lanes] == ["amd64"] * (len(lanes) - 2) + ["arm64", "arm64"]


def test_a_queued_jobs_page_says_why_it_waits(run, chromium, tmp_path):
    url = f"{run['view'].url}jobs/{run['waiting']}"
    wait_until(lambda: "busy" in _fetch(url), timeout=30, what="the scheduler's report of the queued job")
    page = _chromium(chromium, tmp_path / "profile", "--dump-dom", url).stdout
    reason = re.search(r'<p class="queued-reason">([^<]*)</p>', page)
    assert reason and "nodes of group arm64 are busy: the task needs 2 cpu" in reason.group(1), page[-3000:]
    assert '<pre class="pod-spec">' in page and "kubernetes.io/arch: arm64" in page


def test_a_finished_jobs_page_shows_its_log(run, chromium, tmp_path):
    page = _chromium(chromium, tmp_path / "profile", "--dump-dom", f"{run['view'].url}jobs/{run['evaluate']}").stdout
    assert re.search(r'<pre class="log">[^<]*evaluated', page), page[-3000:]


def amd64_bars(page: Elements) -> list[dict[str, str]]:
    nodes = {r["data-job-id"]: r["data-architecture"] for r in page.with_class("job")}
    return [bar for bar in page.with_class("bar") if nodes.get(bar["data-job-id"]) == "amd64"]


def bar_node(page: Elements, bar: dict[str, str]) -> str:
    nodes = defaultdict(str, {r["data-job-id"]: r["data-node"] for r in page.with_class("job")})
    return nodes[bar["data-job-id"]]
