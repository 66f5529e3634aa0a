import dataclasses

import pytest

from armada_flyte import Architecture, ArmadaConfig, InvalidConfig
from armada_flyte.spec import CONFIG_FIELDS, SubmissionSpec

pytestmark = pytest.mark.pure


def test_architecture_is_normalised_when_built():
    assert ArmadaConfig(architecture="aarch64").architecture is Architecture.arm64
    assert ArmadaConfig().architecture is None


@pytest.mark.parametrize(
    "kwargs, field, hint",
    [
        ({"architecture": "sparc"}, "ArmadaConfig.architecture", "arm64"),
        ({"queue": ""}, "ArmadaConfig.queue", "non-empty"),
        ({"queue": 5}, "ArmadaConfig.queue", "non-empty"),
        ({"job_set_id": "x" * 1024}, "ArmadaConfig.job_set_id", "1023"),
        ({"namespace": "Bad_NS"}, "ArmadaConfig.namespace", "lower-case"),
        ({"priority": -1}, "ArmadaConfig.priority", ">= 0"),
        ({"priority": "high"}, "ArmadaConfig.priority", ">= 0"),
        ({"cpu": "two"}, "ArmadaConfig.cpu", "quantity"),
        ({"cpu": "0"}, "ArmadaConfig.cpu", "positive"),
        ({"memory": "4GB"}, "ArmadaConfig.memory", "quantity"),
        ({"gang_cardinality": 3}, "ArmadaConfig.gang_id", "gang_id"),
        ({"gang_id": "g"}, "ArmadaConfig.gang_cardinality", "how many"),
        ({"gang_id": "g", "gang_cardinality": 0}, "ArmadaConfig.gang_cardinality", ">= 1"),
        ({"gang_id": "g", "gang_cardinality": 2.5}, "ArmadaConfig.gang_cardinality", "whole number"),
        ({"gang_node_uniformity_label": "zone"}, "ArmadaConfig.gang_node_uniformity_label", "gang_id"),
        (
            {"gang_id": "g", "gang_cardinality": 2, "gang_node_uniformity_label": "bad label!"},
            "ArmadaConfig.gang_node_uniformity_label",
            "63 characters",
        ),
    ],
)
def test_bad_values_fail_when_built_naming_the_field(kwargs, field, hint):
    with pytest.raises(InvalidConfig) as info:
        ArmadaConfig(**kwargs)
    assert info.value.field == field
    assert hint in str(info.value)


def test_credentials_are_refused_and_not_echoed():
    with pytest.raises(InvalidConfig) as info:
        ArmadaConfig(queue="token=abc123")
    assert "abc123" not in str(info.value)
    assert "connector settings" in str(info.value)


def test_config_has_no_credential_fields():
    names = set(ArmadaConfig.__dataclass_fields__)
    assert not {n for n in names if any(w in n for w in ("token", "password", "secret", "key"))}


def test_custom_round_trip_keeps_values_and_sources():
    spec = SubmissionSpec.from_config(
        ArmadaConfig(queue="ml", architecture="arm64", cpu="2", gang_id="g", gang_cardinality=3),
        {"queue": "task", "architecture": "project"},
    )
    custom = spec.to_custom()
    assert custom["architecture"] == "arm64"
    assert custom["sources"] == {"queue": "task", "architecture": "project"}
    # Protobuf Struct turns ints into floats: parsing must bring them back.
    custom["gang_cardinality"] = 3.0
    again = SubmissionSpec.from_custom(custom)
    assert again == spec
    assert again.source_of("architecture") == "project"
    assert again.source_of("namespace") == "default"


def test_every_config_field_is_a_spec_field_and_reaches_it_unchanged():
    """`from_config` copies the fields by name, so the two classes must name them alike."""
    assert set(CONFIG_FIELDS) <= {f.name for f in dataclasses.fields(SubmissionSpec)}
    config = ArmadaConfig(
        queue="q",
        job_set_id="js",
        namespace="ns",
        priority=0.0,
        cpu="2",
        memory="4Gi",
        gang_id="g",
        gang_cardinality=2,
        gang_node_uniformity_label="zone",
        architecture=["arm64", "amd64"],
        spill_after=30,
    )
    assert set(CONFIG_FIELDS) == {
        "queue",
        "job_set_id",
        "namespace",
        "priority",
        "cpu",
        "memory",
        "gang_id",
        "gang_cardinality",
        "gang_node_uniformity_label",
        "architecture",
        "spill_after",
    }, "a new ArmadaConfig field: set it above too"
    spec = SubmissionSpec.from_config(config, {})
    assert {name: getattr(spec, name) for name in CONFIG_FIELDS} == {n: getattr(config, n) for n in CONFIG_FIELDS}
    assert isinstance(spec.priority, float)


def test_custom_defaults_when_empty():
    spec = SubmissionSpec.from_custom({})
    assert (spec.queue, spec.namespace, spec.priority, spec.architecture) == ("flyte", "default", 1.0, None)


@pytest.mark.parametrize(
    "custom, field",
    [
        ({"queue": "q", "surprise": 1}, "custom"),
        ({"architecture": "mips"}, "custom.architecture"),
        ({"sources": {"queue": "somewhere"}}, "custom.sources"),
        ({"namespace": "UPPER"}, "custom.namespace"),
    ],
)
def test_bad_custom_is_refused_at_the_boundary(custom, field):
    with pytest.raises(InvalidConfig) as info:
        SubmissionSpec.from_custom(custom)
    assert info.value.field == field
