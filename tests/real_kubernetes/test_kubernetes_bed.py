"""`scripts/real-armada.sh up --kubernetes` and `down`: the bed comes up with a Kubernetes cluster, Armada's own
executor and Binoculars on it, prints KUBECONFIG beside ARMADA_URL, and `down` leaves no process or port."""

from __future__ import annotations

import pathlib
import subprocess

import pytest

from support.exposure import accepts_connections, process_group_members
from support.real_armada import UP_TIMEOUT_SECONDS, bed_script, parse_assignments, uses_real_armada

KUBE_PARTS = {
    "etcd",
    "kube-apiserver",
    "kube-scheduler",
    "kube-controller-manager",
    "node-agent",
    "executor",
    "binoculars",
}


@pytest.mark.timeout(UP_TIMEOUT_SECONDS)
def test_up_with_kubernetes_runs_armadas_executor_on_the_cluster_and_down_leaves_nothing(request):
    if not uses_real_armada(request.config):
        pytest.skip("starts a bed of its own: run with --armada real")
    up = bed_script("up", "--kubernetes")
    bed = parse_assignments(up.stdout)
    assert up.returncode == 0, up.stderr[-4000:]
    state, base = pathlib.Path(bed["REAL_ARMADA_STATE"]), int(bed["ARMADA_URL"].rsplit(":", 1)[1]) - 1
    try:
        assert bed["KUBECONFIG"] == str(state / "kubernetes" / "bed-admin.kubeconfig")
        assert bed["ARMADA_FLYTE_BINOCULARS_URL"] == f"127.0.0.1:{base + 26}"
        nodes = subprocess.run(
            ["kubectl", "--kubeconfig", bed["KUBECONFIG"], "get", "nodes", "-o", "name"], capture_output=True, text=True
        )
        assert sorted(nodes.stdout.split()) == [f"node/{n}" for n in ("amd64-0", "amd64-1", "arm64-0", "arm64-1")]
        executor = (state / "commands" / "executor").read_text()
        assert "/real-kubernetes/" in executor and "/bin/executor " in executor  # Armada's own, from its cache
        leaders = {path.stem: int(path.read_text()) for path in (state / "pids").glob("*.pid")}
        assert set(leaders) >= KUBE_PARTS
        started = process_group_members(set(leaders.values()))
    finally:
        down = bed_script("down", bed=bed)
    assert down.returncode == 0, down.stderr
    assert not [pid for pid in started if pathlib.Path(f"/proc/{pid}").exists()]
    assert not list((state / "pids").glob("*.pid"))
    assert not [port for port in range(base + 1, base + 29) if accepts_connections("127.0.0.1", port, timeout=1)]
