"""Hostile cluster files for the embedded server: loaded or refused with `InvalidConfig`, never a
crash, a hang, or millions of simulated nodes."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from armada_flyte.embedded.cluster import MAX_NODES, MAX_NODES_PER_GROUP, Cluster
from armada_flyte.errors import InvalidConfig

from support.hostile_values import MAX_MESSAGE, alias_bomb, dumpable_values, yaml_documents

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
_cluster = st.fixed_dictionaries({}, optional={"pool": dumpable_values, "node_groups": st.lists(_group, max_size=3)})


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
        ([_group_of(10**9)], f"at most {MAX_NODES_PER_GROUP} nodes per group"),
        ([_group_of(MAX_NODES_PER_GROUP, f"g{i}") for i in range(6)], f"at most {MAX_NODES} nodes in all"),
    ],
)
def test_unbounded_node_counts_are_refused(tmp_path, groups, problem):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"node_groups": groups}))
    with pytest.raises(InvalidConfig, match=problem):
        Cluster.from_yaml(path)


def test_an_alias_bomb_cluster_file_is_refused(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text(alias_bomb())
    with pytest.raises(InvalidConfig, match="values") as info:
        Cluster.from_yaml(path)
    assert info.value.field == "cluster" and len(str(info.value)) < 600
