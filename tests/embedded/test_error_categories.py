"""Failure categories on failed events, as Armada's executor classifies failed pods
(internal/executor/categorizer/) and the server carries them into the `failed` event
(internal/server/event/conversion/conversions.go).

The defaults are Armada's local deployment's (`_local/executor/config.yaml`); Armada's shipped
executor config has categorization off, so these tests are `embedded_only`.
"""

from __future__ import annotations

import pytest
from armada_client.armada import event_pb2, submit_pb2
from armada_client.client import ArmadaClient

from armada_flyte.cluster.cluster_file import Cluster
from armada_flyte.cluster.error_categories import ErrorCategories
from armada_flyte.errors import InvalidConfig
from armada_flyte.pod_runner.model import ContainerEnd

from support.pods import cluster, item, node_set, pod, python, submit_one
from support.waiting import job_error, wait_for_state

pytestmark = pytest.mark.embedded_only


def failed_event(client: ArmadaClient, queue: str, job_set: str, job_id: str) -> event_pb2.JobFailedEvent:
    from support.job_events import job_of, job_set_events, kind

    (event,) = [
        m.message.failed for m in job_set_events(client, queue, job_set) if kind(m) == "failed" and job_of(m) == job_id
    ]
    return event


def exits(code: int) -> tuple[ContainerEnd, ...]:
    return (ContainerEnd("main", code, "Error", "boom"),)


@pytest.mark.pure
def test_the_defaults_are_armadas_local_config() -> None:
    defaults = ErrorCategories()
    assert [defaults.classify(exits(code)).category for code in (1, 2, 126, 127)] == ["user_error"] * 4
    assert defaults.classify(exits(3)).category == "uncategorized"
    assert defaults.classify((ContainerEnd("main", 137, "OOMKilled"),)).category == "oom"
    # Exit code 0 never matches (errormatch.MatchExitCode): only failed containers count.
    assert defaults.classify((ContainerEnd("ok", 0, "Completed"), *exits(3))).category == "uncategorized"


@pytest.mark.pure
def test_rules_match_in_config_order_with_their_subcategory_and_hint() -> None:
    categories = ErrorCategories.model_validate(
        {
            "defaultCategory": "other",
            "defaultSubcategory": "unknown",
            "categories": [
                {
                    "name": "infrastructure",
                    "rules": [
                        {"onConditions": ["DeadlineExceeded"], "subcategory": "deadline"},
                        {"onPodError": {"pattern": "not found"}, "subcategory": "config", "hint": "create it"},
                    ],
                },
                {
                    "name": "user_code",
                    "rules": [
                        {"onExitCodes": {"operator": "NotIn", "values": [1]}, "containerName": "sidecar"},
                        {"onTerminationMessage": {"pattern": "(?i)cuda.*error"}, "subcategory": "cuda"},
                    ],
                },
            ],
        }
    )
    deadline = categories.classify((), "DeadlineExceeded")
    assert (deadline.category, deadline.subcategory) == ("infrastructure", "deadline")
    missing = categories.classify((), "", 'secret "x" not found')
    assert (missing.category, missing.subcategory, missing.with_hint("m")) == (
        "infrastructure",
        "config",
        "m\n\ncreate it",
    )
    assert categories.classify((ContainerEnd("sidecar", 5, "Error"),)).category == "user_code"
    assert categories.classify((ContainerEnd("main", 5, "Error"),)).category == "other"
    cuda = categories.classify((ContainerEnd("main", 1, "Error", "CUDA runtime error"),))
    assert (cuda.category, cuda.subcategory) == ("user_code", "cuda")
    assert categories.classify(exits(9)).event_fields() == {
        "failure_category": "other",
        "failure_subcategory": "unknown",
    }
    assert ErrorCategories(enabled=False).classify(exits(1)).event_fields() == {}


@pytest.mark.pure
@pytest.mark.parametrize(
    ("section", "field"),
    [
        ({"categories": [{"name": "a", "rules": [{}]}]}, "errorCategories.categories.0.rules.0"),
        ({"categories": [{"name": "a", "rules": [{"onConditions": ["Crashed"]}]}]}, "errorCategories.categories.0"),
        ({"categories": [{"name": "a", "rules": [{"onPodError": {"pattern": "("}}]}]}, "pattern"),
        ({"categories": [{"name": "a", "rules": [{"onExitCodes": {"operator": "Is", "values": [1]}}]}]}, "operator"),
    ],
)
def test_a_bad_section_fails_naming_the_field(section: dict, field: str) -> None:
    with pytest.raises(InvalidConfig, match=field.replace(".", r"\.")):
        Cluster.from_mapping({**cluster(node_set("amd64")), "errorCategories": section})


def test_a_failed_pod_carries_its_category(client, queue, job_set) -> None:
    user_error = submit_one(client, queue, job_set, item(pod(python("import sys; sys.exit(1)"))))
    other = submit_one(client, queue, job_set, item(pod(python("import sys; sys.exit(3)"))))
    for job_id in (user_error, other):
        wait_for_state(client, job_id, submit_pb2.FAILED, timeout=30)
    assert failed_event(client, queue, job_set, user_error).failure_category == "user_error"
    assert failed_event(client, queue, job_set, other).failure_category == "uncategorized"


def test_the_cluster_files_categories_replace_the_defaults(own_armada) -> None:
    section = {
        "defaultCategory": "",
        "categories": [
            {
                "name": "flaky",
                "rules": [
                    {
                        "onTerminationMessage": {"pattern": "connection reset"},
                        "subcategory": "network",
                        "hint": "retry the task",
                    }
                ],
            }
        ],
    }
    _, client = own_armada({**cluster(node_set("amd64", cpu="2")), "errorCategories": section})
    flaky = "import sys; print('connection reset by peer', file=sys.stderr); sys.exit(1)"
    job_flaky = submit_one(client, "conformance", "cats", item(pod(python(flaky))))
    job_plain = submit_one(client, "conformance", "cats", item(pod(python("import sys; sys.exit(1)"))))
    for job_id in (job_flaky, job_plain):
        wait_for_state(client, job_id, submit_pb2.FAILED, timeout=30)
    event = failed_event(client, "conformance", "cats", job_flaky)
    assert (event.failure_category, event.failure_subcategory) == ("flaky", "network")
    assert event.reason.endswith("\n\nretry the task")
    assert job_error(client, job_flaky).endswith("\n\nretry the task")
    plain = failed_event(client, "conformance", "cats", job_plain)
    assert (plain.failure_category, plain.failure_subcategory) == ("", "")  # no default category, no match


def test_a_rejected_job_is_an_internal_failure(client, queue, job_set) -> None:
    """Armada's scheduler marks its own rejections `internal`/`job-rejected` (internal/scheduler/scheduler.go)."""
    job_id = submit_one(client, queue, job_set, item(pod(node_selector={"no-such-label": "x"})))
    wait_for_state(client, job_id, submit_pb2.REJECTED, timeout=30)
    event = failed_event(client, queue, job_set, job_id)
    assert (event.failure_category, event.failure_subcategory) == ("internal", "job-rejected")
