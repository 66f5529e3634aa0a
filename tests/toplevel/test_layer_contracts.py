"""Layer contracts inside each side, checked on the real import graph (imports inside functions
count): an import that points up a layer, or across independent modules of one layer, fails and
names the edge. Adding a side or a sub-package is one entry in `CONTRACTS`."""

from __future__ import annotations

import pytest

from support.import_contracts import Independence, Layers, independence_violations, layer_violations, unplaced
from support.import_graph import EDGES, MODULES, Edge

pytestmark = pytest.mark.pure

# Per package, top layer first. `a | b`: a and b may not import each other; `a : b`: they may.
CONTRACTS: dict[str, tuple[Layers | Independence, ...]] = {
    "armada_flyte.task": (
        Layers(
            "armada_flyte.task",
            (
                "plugin",
                "leaf | project_defaults | termination",
                "flyte_internals | image_declaration | runtime_image",
            ),
        ),
    ),
    "armada_flyte.connector": (
        Layers("armada_flyte.connector", ("service", "context", "poll | submit", "armada", "config", "model")),
    ),
    "armada_flyte.connector.model": (
        Layers("armada_flyte.connector.model", ("metadata | identity | job_request | run_details | task_error",)),
    ),
    "armada_flyte.connector.armada": (
        Layers("armada_flyte.connector.armada", ("api", "auth | call_batch | channels | submit_items")),
    ),
    "armada_flyte.connector.config": (
        Layers("armada_flyte.connector.config", ("blob | settings", "settings_groups", "namespaces | node_groups")),
    ),
    "armada_flyte.connector.submit": (
        Layers(
            "armada_flyte.connector.submit",
            (
                "gangs | image_check | plan",
                "pod | tenancy",
                "decisions | execution_context",
                "placement | secrets | template_pod",
                "accelerators",
            ),
        ),
    ),
    "armada_flyte.connector.poll": (
        Layers(
            "armada_flyte.connector.poll",
            (
                "gather",
                "decision | status_view",
                "error_file | job_set_streams | outcome | spill",
                "crash_reasons | landing | phases | queued_report",
            ),
        ),
    ),
    "armada_flyte.registry": (
        Layers(
            "armada_flyte.registry",
            (
                "docker_platforms",
                "client",
                "credentials | destinations",
                "bounded_http | platforms | reference",
            ),
        ),
    ),
    "armada_flyte.local": (
        Layers("armada_flyte.local", ("run", "stack | task_logs", "inflight | journal", "console | pod_log_lines")),
    ),
    "armada_flyte.admin": (
        Layers(
            "armada_flyte.admin",
            (
                "cli",
                "c0_command | dev_command | doctor | dry_run_command | executor_command | image_command | logs_command"
                " | node_agent_command",
                "image_build | view_command",
                "auth_sources | dry_run | image_preflight | until_stopped",
            ),
        ),
    ),
    "armada_flyte.admin.doctor": (
        Layers(
            "armada_flyte.admin.doctor",
            ("command", "inputs | live_checks | render", "config_checks | tenancy_checks", "findings"),
        ),
        Independence("armada_flyte.admin.doctor", ("config_checks", "live_checks")),
    ),
    "armada_flyte.embedded": (
        Layers(
            "armada_flyte.embedded",
            (
                "armada",
                "config",
                "services | kube_api",
                "control_plane",
                "scheduling",
                "store",
                "rules",
                "model",
            ),
        ),
    ),
    "armada_flyte.embedded.services": (
        Layers(
            "armada_flyte.embedded.services",
            (
                "grpc_server",
                "binoculars | events | job_sets | jobs | node | reporting | submit",
                "auth | call_counts | messages",
            ),
        ),
    ),
    "armada_flyte.embedded.kube_api": (
        Layers(
            "armada_flyte.embedded.kube_api",
            (
                "server",
                "cluster_objects | label_selector | pod_logs | tables",
                "job_services | kubeconfig | serving_cert",
            ),
        ),
    ),
    "armada_flyte.embedded.control_plane": (
        Layers(
            "armada_flyte.embedded.control_plane",
            (
                "plane",
                "commands | queries | scheduling_loop",
                "run_lifecycle",
                "gc_freeze | plane_state | run_events",
            ),
        ),
    ),
    "armada_flyte.embedded.scheduling": (
        Layers("armada_flyte.embedded.scheduling", ("reports | scheduler", "gang_fit | matching")),
    ),
    "armada_flyte.embedded.store": (
        Layers(
            "armada_flyte.embedded.store",
            ("event_log | job_index | queues", "persistence", "state_file | write_health", "rows", "jobs"),
        ),
    ),
    "armada_flyte.embedded.rules": (
        Layers("armada_flyte.embedded.rules", ("submit_validation", "defaults | job_sets | retries")),
    ),
    "armada_flyte.embedded.model": (
        Layers("armada_flyte.embedded.model", ("job_request | refusals | requirements | resources",)),
    ),
    "armada_flyte.pod_runner": (
        Layers(
            "armada_flyte.pod_runner",
            (
                "docker | process",
                "pod_threads | sandbox",
                "container_env | cpu_pins | cpu_shares | host_view | images | pod_fence | pod_shim | process_tree"
                " | shim_report",
                "model",
                "pod_log | pod_secrets",
            ),
        ),
    ),
    "armada_flyte.cluster": (
        Layers("armada_flyte.cluster", ("cluster_file", "error_categories | ingress | pod_metadata | secrets")),
    ),
    "armada_flyte.view": (
        Layers(
            "armada_flyte.view",
            ("http_server", "pages", "snapshot", "armada_reader | jobs | known_job_sets | task_errors"),
        ),
    ),
    "armada_flyte.executor": (
        Layers(
            "armada_flyte.executor",
            ("lease_loop", "held_runs", "run_events", "cluster_nodes | leases | scheduler_connection", "stubs"),
        ),
    ),
    "armada_flyte.node_agent": (
        Layers(
            "armada_flyte.node_agent",
            (
                "agent | kubelet_endpoint",
                "container_logs | pod_decisions | pod_secrets | pod_spec | pod_status",
                "kube_api | node_objects",
                "kubeconfig",
            ),
        ),
    ),
}

NOT_A_SIDE = {"armada_flyte", "armada_flyte.protos"}  # the top level, and generated protobuf code


def _violations(contract: Layers | Independence, edges: set[Edge]) -> list[str]:
    if isinstance(contract, Layers):
        return layer_violations(contract, edges)
    return independence_violations(contract, edges)


def _all_contracts() -> list[Layers | Independence]:
    return [contract for contracts in CONTRACTS.values() for contract in contracts]


def test_every_side_and_sub_package_has_a_contract_entry():
    packages = {name for name, path in MODULES.items() if path.name == "__init__.py"} - NOT_A_SIDE
    missing = sorted(packages - set(CONTRACTS))
    assert not missing, f"add an entry to CONTRACTS for {missing}"
    assert not sorted(set(CONTRACTS) - packages), "CONTRACTS names packages that no longer exist"


@pytest.mark.parametrize("contract", _all_contracts(), ids=lambda c: f"{type(c).__name__}:{c.package}")
def test_the_package_keeps_its_contract(contract):
    violations = _violations(contract, EDGES)
    assert not violations, "\n".join(violations)


@pytest.mark.parametrize("contract", [c for c in _all_contracts() if isinstance(c, Layers)], ids=lambda c: c.package)
def test_every_module_of_a_layered_package_has_a_layer(contract):
    missing = unplaced(contract, MODULES)
    assert not missing, f"place these modules in a layer of {contract.package}'s contract: {missing}"


def test_the_contracts_name_real_modules():
    """A typo in a contract would silently check nothing."""
    unknown = [
        f"{contract.package}.{group}"
        for contract in _all_contracts()
        for group in (
            [g for groups, _ in contract.parsed() for g in groups] if isinstance(contract, Layers) else contract.groups
        )
        if f"{contract.package}.{group}" not in MODULES
    ]
    assert not unknown


SYNTHETIC = Layers("pkg", ("top", "middle_a | middle_b", "low_a : low_b"))


@pytest.mark.parametrize(
    "edge, expected",
    [
        (
            Edge("pkg.low_a", "pkg.top", True),
            "pkg.low_a -> pkg.top (inside a function): 'top' is in a layer above 'low_a'",
        ),
        (
            Edge("pkg.middle_a.inner", "pkg.top", False),
            "pkg.middle_a.inner -> pkg.top: 'top' is in a layer above 'middle_a'",
        ),
        (
            Edge("pkg.middle_a", "pkg.middle_b", False),
            "pkg.middle_a -> pkg.middle_b: 'middle_a' and 'middle_b' are independent (one layer, '|')",
        ),
    ],
)
def test_the_checker_names_an_upward_or_sideways_edge(edge, expected):
    allowed = {
        Edge("pkg.top", "pkg.middle_a", False),
        Edge("pkg.low_a", "pkg.low_b", False),
        Edge("pkg.x", "pkg.top", False),
    }
    assert layer_violations(SYNTHETIC, allowed) == []
    assert layer_violations(SYNTHETIC, allowed | {edge}) == [expected]


def test_the_checker_names_an_edge_between_independent_groups():
    contract = Independence("pkg", ("a", "b"))
    edges = {Edge("pkg.a.x", "pkg.b", False), Edge("pkg.a", "pkg.c", False), Edge("pkg.c", "pkg.b", False)}
    assert independence_violations(contract, edges) == ["pkg.a.x -> pkg.b: 'a' and 'b' are independent"]


def test_a_module_no_layer_names_is_reported():
    assert unplaced(SYNTHETIC, ["pkg", "pkg.top", "pkg.middle_b.deep", "pkg.new", "other.top"]) == ["pkg.new"]
