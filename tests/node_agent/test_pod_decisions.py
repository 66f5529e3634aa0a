"""What a pod seen on the watch asks of the node: one table of cases, as a kubelet acts on its pods."""

from __future__ import annotations

import pytest

from armada_flyte.node_agent.pod_decisions import Known, Step, grace_seconds, next_step

pytestmark = pytest.mark.pure

NODES = {"amd64-0", "arm64-0"}


def pod(node: str = "amd64-0", uid: str = "u1", phase: str = "Pending", **extra: object) -> dict:
    metadata = {"name": "armada-01-0", "namespace": "default", "uid": uid, **extra.pop("metadata", {})}
    return {"metadata": metadata, "spec": {"nodeName": node}, "status": {"phase": phase, **extra}}


def deleting(**extra: object) -> dict:
    return pod(metadata={"deletionTimestamp": "2026-12-07T00:00:00Z"}, **extra)


@pytest.mark.parametrize(
    "event, seen, known, step",
    [
        ("ADDED", pod(), None, Step.LAUNCH),
        ("SYNC", pod(), None, Step.LAUNCH),
        ("ADDED", pod(node="other-node"), None, Step.NOTHING),
        ("ADDED", pod(node=""), None, Step.NOTHING),
        ("MODIFIED", pod(phase="Running"), Known("u1"), Step.NOTHING),
        ("MODIFIED", pod(phase="Succeeded"), None, Step.NOTHING),
        ("SYNC", pod(phase="Running", startTime="2026-12-07T00:00:00Z"), None, Step.REPORT_LOST),
        ("MODIFIED", deleting(), Known("u1"), Step.STOP),
        ("MODIFIED", deleting(), Known("u1", stopping=True), Step.NOTHING),
        ("MODIFIED", deleting(), Known("u1", ended=True), Step.FINISH_DELETION),
        ("MODIFIED", deleting(), None, Step.FINISH_DELETION),
        ("DELETED", pod(), Known("u1"), Step.FORGET),
        ("DELETED", pod(), None, Step.NOTHING),
        ("MODIFIED", pod(uid="u2"), Known("u1"), Step.NOTHING),
    ],
    ids=[
        "a new pod bound here is launched",
        "a listed pod bound here is launched",
        "another node's pod is not ours",
        "an unbound pod is not ours",
        "our own status change asks nothing",
        "an ended pod the node never ran is left alone",
        "a started pod the node no longer holds is reported lost, not run twice",
        "a deletion of a running pod stops it",
        "a pod already stopping is not stopped twice",
        "a deletion of an ended pod is finished",
        "a deletion of a pod the node never ran is finished at once",
        "a pod the API server removed is forgotten",
        "removing a pod the node never held asks nothing",
        "an earlier pod of the same name is another pod",
    ],
)
def test_the_step_a_pod_event_asks_for(event, seen, known, step):
    assert next_step(event, seen, NODES, known) is step


@pytest.mark.parametrize(
    "metadata, spec, seconds",
    [
        ({"deletionGracePeriodSeconds": 5}, {"terminationGracePeriodSeconds": 60}, 5.0),
        ({"deletionGracePeriodSeconds": 0}, {}, 0.0),
        ({}, {"terminationGracePeriodSeconds": 7}, 7.0),
        ({}, {}, 30.0),
    ],
    ids=["the deletion's own", "a forced deletion", "the pod's", "Kubernetes' default"],
)
def test_a_stop_waits_the_grace_period_of_the_deletion(metadata, spec, seconds):
    assert grace_seconds({"metadata": metadata, "spec": spec}) == seconds
