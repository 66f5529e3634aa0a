"""Hostile cluster files for the embedded server: loaded or refused with `InvalidConfig`, never a
crash, a hang, millions of simulated nodes, or an amount past Kubernetes' range kept as if it were real."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from armada_flyte.cluster.cluster_file import MAX_NODES, MAX_NODES_PER_SET, Cluster
from armada_flyte.errors import InvalidConfig
from armada_flyte.kube import MAX_QUANTITY

from support.hostile_values import (
    MAX_MESSAGE,
    alias_bomb,
    awkward_numbers,
    awkward_text,
    dumpable_values,
    yaml_documents,
)

pytestmark = pytest.mark.pure

_group = st.fixed_dictionaries(
    {},
    optional={
        "name": st.one_of(st.sampled_from(["amd", "arm", "a-b"]), dumpable_values),
        "nodes": st.one_of(st.integers(-5, 10**12), dumpable_values),
        "labels": st.one_of(st.just({"kubernetes.io/arch": "amd64"}), dumpable_values),
        "taints": dumpable_values,
        "allocatable": st.one_of(st.just({"cpu": "4", "memory": "16Gi"}), dumpable_values),
        "extra": dumpable_values,
    },
)
_cluster = st.fixed_dictionaries({}, optional={"pool": dumpable_values, "node_sets": st.lists(_group, max_size=3)})


@settings(max_examples=80, deadline=None)
@given(st.one_of(yaml_documents, _cluster.map(lambda doc: yaml.safe_dump(doc, allow_unicode=True))))
def test_any_cluster_file_loads_or_raises_invalid_config(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("cluster") / "cluster.yaml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    try:
        cluster = Cluster.from_yaml(path)
    except InvalidConfig as exc:
        assert len(str(exc)) < MAX_MESSAGE
    else:
        assert len(cluster.nodes) <= MAX_NODES


def _group_of(nodes: int, name: str = "amd") -> dict:
    return {
        "name": name,
        "nodes": nodes,
        "labels": {"kubernetes.io/arch": "amd64"},
        "allocatable": {"cpu": "4", "memory": "8Gi"},
    }


@pytest.mark.parametrize(
    "groups, problem",
    [
        ([_group_of(10**9)], f"at most {MAX_NODES_PER_SET} nodes per node set"),
        ([_group_of(MAX_NODES_PER_SET, f"g{i}") for i in range(6)], f"at most {MAX_NODES} nodes in all"),
    ],
)
def test_unbounded_node_counts_are_refused(tmp_path, groups, problem):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"node_sets": groups}))
    with pytest.raises(InvalidConfig, match=problem):
        Cluster.from_yaml(path)


def test_an_alias_bomb_cluster_file_is_refused(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text(alias_bomb())
    with pytest.raises(InvalidConfig, match="values") as info:
        Cluster.from_yaml(path)
    assert info.value.field == "cluster" and len(str(info.value)) < 600


_FACTORS = {
    **{suffix: Fraction(10) ** power for suffix, power in zip("num", (-9, -6, -3))},
    "": Fraction(1),
    **{suffix: Fraction(10) ** (3 * n) for n, suffix in enumerate("kMGTPE", start=1)},
    **{f"{suffix}i": Fraction(2) ** (10 * n) for n, suffix in enumerate("KMGTPE", start=1)},
}
"""Kubernetes' suffixes and what each multiplies by (resource.Quantity, apimachinery's suffix.go)."""


@st.composite
def written_quantities(draw) -> tuple[str, Fraction]:
    """A positive quantity as an admin writes it (any suffix, or an exponent) and its exact amount."""
    mantissa = draw(st.decimals(min_value="0.001", max_value=10**10, places=3))
    if draw(st.booleans()):
        suffix = draw(st.sampled_from(sorted(_FACTORS)))
        return f"{mantissa:f}{suffix}", Fraction(mantissa) * _FACTORS[suffix]
    exponent = draw(st.integers(-12, 30))
    return f"{mantissa:f}e{exponent}", Fraction(mantissa) * Fraction(10) ** exponent


def _one_group(cpu: object) -> dict:
    return {"node_sets": [{**_group_of(1), "allocatable": {"cpu": cpu, "memory": "8Gi"}}]}


@settings(max_examples=300, deadline=None)
@given(written_quantities())
def test_a_quantity_in_kubernetes_range_round_trips_and_one_past_it_is_refused_with_the_limit(
    tmp_path_factory, written
):
    text, amount = written
    path = tmp_path_factory.mktemp("cluster") / "cluster.yaml"
    path.write_text(yaml.safe_dump(_one_group(text)))
    if amount <= MAX_QUANTITY:
        node = Cluster.from_yaml(path).nodes[0]
        assert node.allocatable["cpu"] == math.ceil(amount * 1000)  # thousandths, rounded up as Kubernetes does
        return
    with pytest.raises(InvalidConfig) as info:
        Cluster.from_yaml(path)
    assert (info.value.field, info.value.value) == (f"{path}: node_sets.0.allocatable.cpu", text)
    assert str(MAX_QUANTITY) in str(info.value) and "2^63-1" in str(info.value)


@settings(max_examples=200, deadline=None)
@given(st.one_of(awkward_numbers, awkward_text, dumpable_values))
def test_any_allocatable_amount_loads_within_kubernetes_range_or_is_refused(cpu):
    try:
        cluster = Cluster.from_mapping(_one_group(cpu), "cluster.yaml")
    except InvalidConfig as exc:
        assert exc.field.startswith("cluster.yaml: node_sets.0.allocatable") and len(str(exc)) < MAX_MESSAGE
    else:
        assert 0 < cluster.nodes[0].allocatable["cpu"] <= MAX_QUANTITY * 1000, "an absurd amount was kept"


def test_the_issues_cpu_1e5000_names_the_file_the_field_the_value_and_the_limit(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(_one_group("1e5000")))
    with pytest.raises(InvalidConfig) as info:
        Cluster.from_yaml(path)
    message = str(info.value)
    for part in (str(path), "node_sets.0.allocatable.cpu", "'1e5000'", "9223372036854775807"):
        assert part in message


@settings(max_examples=100, deadline=None)
@given(st.integers())
def test_an_exit_code_in_error_categories_loads_as_an_int32_or_is_refused_with_the_limit(code):
    rule = {"onExitCodes": {"operator": "In", "values": [code]}}
    document = {**_one_group("4"), "errorCategories": {"categories": [{"name": "mine", "rules": [rule]}]}}
    if -(2**31) <= code < 2**31:
        assert Cluster.from_mapping(document, "cluster.yaml").error_categories.categories[0].rules[0]
        return
    with pytest.raises(InvalidConfig) as info:
        Cluster.from_mapping(document, "cluster.yaml")
    assert info.value.field == "cluster.yaml: errorCategories.categories.0.rules.0.onExitCodes.values.0"
    assert str(2**31 - 1) in str(info.value) or str(-(2**31)) in str(info.value)
