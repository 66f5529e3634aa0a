"""`EmbeddedConfig` is checked when it is made: `pod_runner` (and `executor=`, its old spelling), its seconds."""

from __future__ import annotations

import pytest

from armada_flyte.embedded import EmbeddedConfig
from armada_flyte.errors import InvalidConfig

pytestmark = pytest.mark.pure


def test_the_pod_runner_defaults_to_local_processes():
    assert EmbeddedConfig().pod_runner == "process"


def test_the_old_spelling_executor_sets_the_pod_runner():
    config = EmbeddedConfig(executor="docker")
    assert (config.pod_runner, config.executor) == ("docker", None)
    runner = object()
    assert EmbeddedConfig(executor=runner).pod_runner is runner  # type: ignore[arg-type]


def test_both_spellings_at_once_is_a_mistake_naming_the_fix():
    with pytest.raises(InvalidConfig) as error:
        EmbeddedConfig(pod_runner="docker", executor="process")
    assert error.value.field == "executor" and "give only pod_runner" in error.value.fix


@pytest.mark.parametrize(
    "field, value",
    [
        ("visibility_delay", float("inf")),
        ("visibility_delay", float("nan")),
        ("visibility_delay", -1.0),
        ("idle_seconds", float("inf")),
    ],
)
def test_seconds_that_are_not_finite_or_below_zero_are_refused_naming_the_field(field, value):
    """An infinite visibility delay would hide every job for good (`dev --visibility-delay inf`)."""
    with pytest.raises(InvalidConfig) as error:
        EmbeddedConfig(**{field: value})
    assert error.value.field == field
