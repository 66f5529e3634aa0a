"""The README's main job (examples/multiarch.py) through the connector: its arm64 tasks land on arm64
nodes and the rest on amd64, by the scheduler's decision (the embedded one, or real Armada's with
`--armada real`); on a bed with Kubernetes, each task's pod is bound to such a node by kube-scheduler."""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

from armada_flyte.local import journal

pytestmark = pytest.mark.e2e

EXAMPLES = pathlib.Path(__file__).parents[2] / "examples"


def test_the_examples_arm64_tasks_land_on_arm64_nodes_and_the_others_on_amd64(stack, armada_logs):
    import flyte

    from armada_flyte import configure

    configure(**stack.connector_settings())
    journal.clear()
    sys.path.insert(0, str(EXAMPLES))
    try:
        import multiarch

        stack.init_flyte(EXAMPLES)
        run = flyte.with_runcontext(mode="local", raw_data_path=stack.raw_data_path).run(
            multiarch.pipeline, n=20, epochs=5
        )
    finally:
        sys.path.remove(str(EXAMPLES))
    outputs = run.outputs()
    assert float(outputs[0] if isinstance(outputs, tuple) else outputs) > 0
    placed = sorted((job.task, job.node_group, job.node.split("-")[0], job.outcome) for job in journal.jobs())
    assert placed == sorted(
        [("prepare", "amd64", "amd64", "SUCCEEDED")]
        + [("train", "arm64", "arm64", "SUCCEEDED")] * 3
        + [("evaluate", "amd64", "amd64", "SUCCEEDED")] * 3
    ), armada_logs()
    from support.real_kubernetes import bed_kubeconfig, job_pod, pod_events

    if stack.server is None and bed_kubeconfig():  # a real bed with Kubernetes (up --kubernetes)
        bed = dict(os.environ)
        for job in journal.jobs():
            pod = job_pod(bed, job.job_id)
            assert pod["spec"]["nodeName"].split("-")[0] == job.node_group, (job, pod["spec"])
            binders = {
                e.get("reportingComponent") or e["source"].get("component")
                for e in pod_events(bed, pod["metadata"]["name"])
                if e["reason"] == "Scheduled"
            }
            assert binders == {"default-scheduler"}, binders
