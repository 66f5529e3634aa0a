"""The node report: the cluster file's nodes as real Armada's scheduler reads them."""

from __future__ import annotations

import pytest

from support.executor_parts import require_executor_stubs

require_executor_stubs()

pytestmark = pytest.mark.pure

from armada_client.armada import submit_pb2  # noqa: E402

from armada_flyte.cluster.cluster_file import Cluster  # noqa: E402
from armada_flyte.executor.cluster_nodes import lease_request, quantity  # noqa: E402


def test_every_node_of_the_default_cluster_is_reported_with_its_labels_taints_and_resources():
    request = lease_request(Cluster.default(), {})
    nodes = {node.name: node for node in request.nodes}
    assert sorted(nodes) == ["amd64-0", "amd64-1", "arm64-0", "arm64-1"]
    arm = nodes["arm64-1"]
    assert arm.labels["kubernetes.io/arch"] == "arm64"
    assert arm.labels["kubernetes.io/hostname"] == "arm64-1"
    assert [(t.key, t.value, t.effect) for t in arm.taints] == [("kubernetes.io/arch", "arm64", "NoSchedule")]
    assert arm.total_resources["cpu"].string == "4"
    assert arm.total_resources["memory"].string == str(8 * 2**30)
    assert arm.allocatable_resources == arm.total_resources
    assert (arm.pool, arm.node_type, arm.unschedulable) == ("default", "arm64", False)
    assert not nodes["amd64-0"].taints
    assert nodes["amd64-0"].labels["kubernetes.io/arch"] == "amd64"


def test_the_request_names_the_executor_its_pool_and_the_cluster_total():
    cluster = Cluster.default()
    request = lease_request(cluster, {}, max_jobs_to_lease=7)
    assert (request.executor_id, request.pool, request.max_jobs_to_lease) == (cluster.executor, "default", 7)
    assert request.resources["cpu"].string == "16"


def test_held_runs_are_reported_on_their_node_by_state():
    request = lease_request(Cluster.default(), {"arm64-0": {"r1": submit_pb2.RUNNING, "r2": submit_pb2.SUCCEEDED}})
    by_node = {node.name: dict(node.run_ids_by_state) for node in request.nodes}
    assert by_node["arm64-0"] == {"r1": submit_pb2.RUNNING, "r2": submit_pb2.SUCCEEDED}
    assert by_node["amd64-0"] == {}


def test_quantities_keep_fractions_in_thousandths():
    assert [quantity(4000).string, quantity(500).string, quantity(1500).string] == ["4", "500m", "1500m"]
