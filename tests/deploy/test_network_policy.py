"""What the NetworkPolicy means: only Flyte's executor reaches the connectors' port, only the monitoring
namespace the metrics, nobody any other port; egress stays open (docs/security.md says why)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.pure

FLYTE_BINARY_POD_LABELS = {
    "app.kubernetes.io/name": "flyte-binary",
    "app.kubernetes.io/instance": "any-release-name",
    "app.kubernetes.io/component": "flyte-binary",
}
"""The labels Flyte 2's flyte-binary chart gives the pod its executor runs in (flyteorg/flyte at 6fadb90,
charts/flyte-binary/templates/_helpers.tpl: baseLabels and selectorLabels; the instance is the release)."""
EXECUTOR_NAMESPACE = {"kubernetes.io/metadata.name": "flyte"}
MONITORING_NAMESPACE = {"kubernetes.io/metadata.name": "monitoring"}


@pytest.fixture(scope="module")
def policy(manifests):
    return manifests["NetworkPolicy/armada-flyte-connector"]["spec"]


@pytest.fixture(scope="module")
def container_ports(connector_pod):
    [connector] = [c for c in connector_pod["containers"] if c["name"] == "connector"]
    return {port["name"]: port["containerPort"] for port in connector["ports"]}


def _rules_for(policy, port):
    return [rule for rule in policy["ingress"] if any(p["port"] == port for p in rule["ports"])]


def test_the_policy_selects_the_connector_pods(policy, manifests):
    pod_labels = manifests["Deployment/armada-flyte-connector"]["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["podSelector"]["matchLabels"] == manifests["Service/armada-flyte-connector"]["spec"]["selector"]


def test_only_ingress_is_restricted_and_egress_is_left_open(policy):
    assert policy["policyTypes"] == ["Ingress"]
    assert "egress" not in policy


def test_every_rule_names_its_peers_and_its_ports(policy):
    """A rule without `from` admits every source, one without `ports` every port."""
    for rule in policy["ingress"]:
        assert rule.get("from") and rule.get("ports"), rule
        assert all(port.get("protocol") == "TCP" for port in rule["ports"])


def test_the_connector_port_admits_only_the_executors_pods_in_the_executors_namespace(policy, container_ports):
    [rule] = _rules_for(policy, container_ports["grpc"])
    assert [p["port"] for p in rule["ports"]] == [container_ports["grpc"]]
    [peer] = rule["from"]  # one peer holding both selectors: pod AND namespace, not pod OR namespace
    assert set(peer) == {"namespaceSelector", "podSelector"}
    assert peer["namespaceSelector"] == {"matchLabels": EXECUTOR_NAMESPACE}
    assert set(peer["podSelector"]) == {"matchLabels"}


def test_the_executor_selector_matches_flyte_binary_pods_whatever_the_release_is_called(policy, container_ports):
    [rule] = _rules_for(policy, container_ports["grpc"])
    selector = rule["from"][0]["podSelector"]["matchLabels"]
    assert selector.items() <= FLYTE_BINARY_POD_LABELS.items()
    assert "app.kubernetes.io/instance" not in selector
    assert selector["app.kubernetes.io/component"] == "flyte-binary"  # not the console, also flyte-binary-named


def test_metrics_are_admitted_only_from_the_monitoring_namespace(policy, container_ports):
    [rule] = _rules_for(policy, container_ports["metrics"])
    assert [p["port"] for p in rule["ports"]] == [container_ports["metrics"]]
    assert rule["from"] == [{"namespaceSelector": {"matchLabels": MONITORING_NAMESPACE}}]


def test_no_rule_admits_the_health_port_or_any_other(policy, container_ports):
    admitted = {port["port"] for rule in policy["ingress"] for port in rule["ports"]}
    assert admitted == {container_ports["grpc"], container_ports["metrics"]}
    assert container_ports["health"] not in admitted
