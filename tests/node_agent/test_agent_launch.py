"""The node agent hands each pod to its runner once, whichever of its threads asks to start it."""

from __future__ import annotations

import threading

import pytest

from armada_flyte.cluster.cluster_file import Cluster
from armada_flyte.node_agent.agent import AgentSettings, HeldPod, NodeAgent
from armada_flyte.node_agent.pod_status import PodProgress
from armada_flyte.pod_runner import PodLog

pytestmark = pytest.mark.pure


class CountingRunner:
    """A pod runner that only counts what it is asked to run."""

    def __init__(self) -> None:
        self.launched: list[str] = []

    def launch(self, launch, reporter) -> None:
        self.launched.append(launch.run_id)


class NoApi:
    """A pod with no Secrets reads nothing from the API server."""

    def get(self, path: str):
        raise AssertionError(f"unexpected API call: {path}")


def held_pod(agent: NodeAgent) -> tuple[HeldPod, dict]:
    spec = {"nodeName": "amd64-0", "containers": [{"name": "main", "image": "busybox", "command": ["true"]}]}
    pod = {"metadata": {"uid": "u1", "namespace": "default", "name": "armada-j1-0", "labels": {}}, "spec": spec}
    held = HeldPod("u1", "default", "armada-j1-0", agent.nodes["amd64-0"], spec, PodLog(), PodProgress())
    agent._pods[held.uid] = held
    return held, pod


def test_a_pod_asked_to_start_twice_runs_once():
    """CI saw the watch's launch and the retry of waiting pods both start one pod, 12 ms apart; the second run
    found the first's sandbox ("File exists") and the pod failed."""
    runner = CountingRunner()
    agent = NodeAgent(NoApi(), Cluster.default(), runner, AgentSettings(kubelet_port=1))
    held, pod = held_pod(agent)
    starters = [threading.Thread(target=agent._try_to_start, args=(held, pod)) for _ in range(4)]
    for starter in starters:
        starter.start()
    for starter in starters:
        starter.join(timeout=30)
    agent._try_to_start(held, pod)  # and once more after it is running
    assert runner.launched == ["u1"]
