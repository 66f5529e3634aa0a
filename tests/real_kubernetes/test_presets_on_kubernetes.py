"""Every node-group preset's placement, as the connector writes it, is accepted and honoured by Kubernetes.

For each preset in arch/ and each architecture it offers, the pod's node selector, tolerations and required
affinity come from `armada-flyte dry-run --preset` (the connector's own placement). A second node agent
registers, beside the bed's own nodes, one node per preset and architecture shaped as that platform's
nodes are (the preset's labels and taints). kube-scheduler must bind each pod to a node of its
architecture that carries every label the pod selects: AKS's arm64 pods, which carry no toleration, can
only go to an untainted arm64 node (the bed's own arm64 nodes are tainted as GKE taints them).
"""

from __future__ import annotations

import json
import pathlib
import socket
import subprocess
import sys
import uuid
from typing import Any, Iterator

import pytest
import yaml

from support.real_kubernetes import kube_object, kubectl
from support.waiting import wait_until

ROOT = pathlib.Path(__file__).resolve().parents[2]
PRESETS = sorted(p.stem for p in (ROOT / "arch").glob("*.yaml"))
CLI = pathlib.Path(sys.executable).parent / "armada-flyte"
TASKS = """
import flyte
from armada_flyte import ArmadaConfig

def env(arch):
    config = ArmadaConfig(queue="flyte", architecture=arch)
    return flyte.TaskEnvironment(arch, image="python:3.11-slim", resources=flyte.Resources(cpu=1, memory="256Mi"),
                                 plugin_config=config)

amd64_env, arm64_env = env("amd64"), env("arm64")

@amd64_env.task
def amd64() -> None: ...

@arm64_env.task
def arm64() -> None: ...
"""


def preset(name: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "arch" / f"{name}.yaml").read_text())


def node_labels_for(group: dict[str, Any], arch: str) -> dict[str, str]:
    """The labels a node of the platform's group carries: what the preset selects, and what its affinity needs."""
    labels = {"kubernetes.io/arch": arch, **(group.get("node_selector") or {})}
    for term in group.get("required_node_affinity") or []:
        if term["operator"] == "In":
            labels[term["key"]] = term["values"][0]
        elif term["operator"] == "Exists":
            labels[term["key"]] = "true"
    return labels


def preset_cluster() -> dict[str, Any]:
    """One node per preset and architecture, labelled and tainted as the preset says the platform's nodes are."""
    groups = []
    for name in PRESETS:
        for arch, group in (preset(name).get("architectures") or {}).items():
            taints = [
                {k: v for k, v in t.items() if k in ("key", "value", "effect")} for t in group.get("taints") or []
            ]
            groups.append(
                {
                    "name": f"{name}-{arch}",
                    "nodes": 1,
                    "labels": node_labels_for(group, arch),
                    "taints": taints,
                    "allocatable": {"cpu": "4", "memory": "8Gi"},
                }
            )
    return {"executor": "preset-nodes", "node_sets": groups}


@pytest.fixture(scope="module")
def preset_nodes(kubernetes_bed, tmp_path_factory) -> Iterator[list[str]]:
    """A second node agent, with the presets' nodes; stopped, and its nodes removed, after the module."""
    folder = tmp_path_factory.mktemp("preset-nodes")
    cluster_file = folder / "cluster.yaml"
    cluster = preset_cluster()
    cluster_file.write_text(yaml.safe_dump(cluster))
    kube = pathlib.Path(kubernetes_bed["REAL_ARMADA_STATE"]) / "kubernetes"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = (folder / "agent.log").open("w")
    agent = subprocess.Popen(
        [str(CLI), "node-agent", "--kubeconfig", str(kube / "armada-flyte-node-agent.kubeconfig"), "--cluster",
         str(cluster_file), "--listen", f"127.0.0.1:{port}", "--tls-cert", str(kube / "kubelet.crt"), "--tls-key",
         str(kube / "kubelet.key"), "--client-ca", str(kube / "ca.crt")],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    names = [f"{group['name']}-0" for group in cluster["node_sets"]]
    try:
        wait_until(lambda: _ready(kubernetes_bed) >= set(names), 60, "the presets' nodes to be Ready")
        yield names
    finally:
        agent.terminate()
        agent.wait(timeout=30)
        log.close()
        kubectl(kubernetes_bed, "delete", "node", *names, "--wait=false", check=False)


def _ready(bed: dict[str, str]) -> set[str]:
    nodes = kube_object(bed, "nodes")["items"]
    return {
        n["metadata"]["name"]
        for n in nodes
        if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))
    }


DRY_RUNS = """
import contextlib, io, json, sys
from armada_flyte.admin.cli import main

for name, arch in json.loads(sys.argv[2]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["dry-run", f"preset_tasks:{arch}", "--preset", name, "--root", sys.argv[1]])
    if status:
        raise SystemExit(f"dry-run of {arch} with preset {name} failed ({status})")
    print(json.dumps([name, arch, json.loads(out.getvalue())["jobRequestItems"][0]["podSpec"]]))
"""
"""`armada-flyte dry-run` for every case in one process: a process each took over 30 s on a busy machine."""


@pytest.fixture(scope="module")
def placements(tmp_path_factory) -> dict[tuple[str, str], dict[str, Any]]:
    """(preset, arch) -> the pod spec's placement fields, from `armada-flyte dry-run --preset`."""
    root = tmp_path_factory.mktemp("preset-tasks")
    (root / "preset_tasks.py").write_text(TASKS)
    dry = subprocess.run(
        [sys.executable, "-c", DRY_RUNS, str(root), json.dumps(CASES)], capture_output=True, text=True, timeout=240
    )
    assert dry.returncode == 0, dry.stderr[-3000:]
    found = {}
    for line in dry.stdout.splitlines():
        name, arch, spec = json.loads(line)
        found[(name, arch)] = {k: spec[k] for k in ("nodeSelector", "tolerations", "affinity") if k in spec}
    return found


CASES = [(name, arch) for name in PRESETS for arch in sorted(preset(name).get("architectures") or {})]


@pytest.mark.parametrize("name, arch", CASES, ids=[f"{n}-{a}" for n, a in CASES])
def test_the_presets_placement_lands_on_a_node_of_its_architecture(
    kubernetes_bed, preset_nodes, placements, name, arch
):
    placement = placements[(name, arch)]
    pod_name = f"preset-{name}-{arch}-{uuid.uuid4().hex[:6]}"
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod_name, "namespace": "default"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "python:3.11-slim",
                    "command": ["python3", "-c", "print('placed')"],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
            **placement,
        },
    }
    created = subprocess.run(
        ["kubectl", "--kubeconfig", kubernetes_bed["KUBECONFIG"], "create", "-f", "-"],
        input=json.dumps(manifest), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert created.returncode == 0, f"the API server refused the {name} {arch} placement: {created.stderr}"
    try:
        pod = wait_until(lambda: _ended(kubernetes_bed, pod_name), 120, f"pod {pod_name} to run")
        node = kube_object(kubernetes_bed, "node", pod["spec"]["nodeName"])
        labels = node["metadata"]["labels"]
        assert labels["kubernetes.io/arch"] == arch
        assert all(labels.get(k) == v for k, v in placement.get("nodeSelector", {}).items())
        assert pod["status"]["phase"] == "Succeeded"
    finally:
        kubectl(kubernetes_bed, "delete", "pod", pod_name, "--wait=false", check=False)


def _ended(bed: dict[str, str], name: str) -> Any:
    pod = kube_object(bed, "pod", name)
    return pod if pod.get("status", {}).get("phase") in ("Succeeded", "Failed") else None
