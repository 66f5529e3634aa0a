"""The statuses the node agent reports are a kubelet's: phases only move forward, and an end reads as
Armada's executor expects (exit codes, reasons such as OOMKilled and DeadlineExceeded, times)."""

from __future__ import annotations

import datetime

import pytest

from armada_flyte.node_agent.pod_status import Phase, PodProgress, advanced, ended_phase, pod_status
from armada_flyte.pod_runner import DEADLINE_MESSAGE, DEADLINE_REASON, ContainerEnd, PodEnd

pytestmark = pytest.mark.pure

T0 = datetime.datetime(2026, 12, 7, 10, 0, 0, tzinfo=datetime.timezone.utc)
T1 = T0 + datetime.timedelta(seconds=3)
T2 = T0 + datetime.timedelta(seconds=9)
SPEC = {"containers": [{"name": "main", "image": "python:3.11-slim"}]}


def ended(end: PodEnd) -> dict:
    progress = PodProgress(ended_phase(end), T0, T1, T2, end, ends=end.containers)
    return pod_status(SPEC, progress)


def test_a_pod_being_set_up_is_pending_with_its_containers_creating():
    status = pod_status(SPEC, PodProgress(started_at=T0))
    assert status["phase"] == "Pending" and status["startTime"] == "2026-12-07T10:00:00Z"
    assert status["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}


def test_a_missing_secret_keeps_the_container_waiting_with_kubernetes_words():
    progress = PodProgress(
        started_at=T0, waiting_reason="CreateContainerConfigError", waiting_message='secret "x" not found'
    )
    waiting = pod_status(SPEC, progress)["containerStatuses"][0]["state"]["waiting"]
    assert waiting == {"reason": "CreateContainerConfigError", "message": 'secret "x" not found'}


def test_a_running_pod_is_ready_and_its_container_runs_since_it_started():
    status = pod_status(SPEC, PodProgress(Phase.RUNNING, T0, T1))
    container = status["containerStatuses"][0]
    assert status["phase"] == "Running" and container["ready"] is True
    assert container["state"] == {"running": {"startedAt": "2026-12-07T10:00:03Z"}}
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"


def test_a_pod_that_ended_well_succeeded_with_its_container_completed():
    status = ended(PodEnd(0, "", (ContainerEnd("main", 0, "Completed"),)))
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert status["phase"] == "Succeeded" and "message" not in status
    assert terminated == {
        "exitCode": 0,
        "reason": "Completed",
        "startedAt": "2026-12-07T10:00:03Z",
        "finishedAt": "2026-12-07T10:00:09Z",
    }


def test_a_failed_container_fails_the_pod_with_its_exit_code_and_no_pod_message():
    """Armada's executor reads the pod's message first: left empty, it writes the failure from the containers."""
    status = ended(PodEnd(3, "boom", (ContainerEnd("main", 3, "Error", "boom"),)))
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert status["phase"] == "Failed" and "message" not in status
    assert (terminated["exitCode"], terminated["reason"], terminated["message"]) == (3, "Error", "boom")


def test_an_oom_killed_container_says_so_as_a_kubelet_does():
    status = ended(PodEnd(137, "", (ContainerEnd("main", 137, "OOMKilled"),)))
    assert status["containerStatuses"][0]["state"]["terminated"]["reason"] == "OOMKilled"


def test_a_pod_past_its_active_deadline_has_the_kubelets_reason_and_message():
    status = ended(PodEnd(137, DEADLINE_MESSAGE, (ContainerEnd("main", 137, "Error"),), DEADLINE_REASON))
    assert (status["phase"], status["reason"], status["message"]) == ("Failed", "DeadlineExceeded", DEADLINE_MESSAGE)


def test_a_pod_that_never_ran_says_why_in_its_message():
    status = ended(PodEnd(128, "the pod runner could not start the pod: no such image"))
    assert status["message"] == "the pod runner could not start the pod: no such image"


@pytest.mark.parametrize(
    "now, to, forward",
    [
        (Phase.PENDING, Phase.RUNNING, True),
        (Phase.RUNNING, Phase.SUCCEEDED, True),
        (Phase.PENDING, Phase.FAILED, True),
        (Phase.RUNNING, Phase.PENDING, False),
        (Phase.SUCCEEDED, Phase.RUNNING, False),
        (Phase.SUCCEEDED, Phase.FAILED, False),
        (Phase.FAILED, Phase.SUCCEEDED, False),
    ],
)
def test_the_phase_only_moves_forward_and_an_ended_pod_never_moves(now, to, forward):
    """The API server accepts a status patch from Succeeded back to Running: the agent must refuse it itself."""
    assert advanced(PodProgress(now), to) is forward


def test_an_ended_pod_with_a_pod_level_reason_failed_even_with_exit_code_zero():
    assert ended_phase(PodEnd(0, "image not found", (), "ErrImagePull")) is Phase.FAILED
    assert ended_phase(PodEnd(0, "", ())) is Phase.SUCCEEDED
