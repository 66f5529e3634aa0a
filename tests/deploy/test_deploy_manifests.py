"""The files in deploy/ parse, and point at the package's real entry points and settings names."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import pathlib
import re

import pytest
import yaml

from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.spec import TASK_TYPE

from support.service_links import service_link_env

pytestmark = pytest.mark.pure


def _containers(pod):
    return [*pod.get("initContainers", []), *pod["containers"]]


def _connector_container(pod):
    [container] = [c for c in pod["containers"] if c["name"] == "connector"]
    return container


def _flag(args, name):
    return args[args.index(name) + 1]


def test_every_yaml_file_in_deploy_parses(deploy_dir):
    files = sorted(deploy_dir.rglob("*.yaml"))
    assert len(files) >= 8
    for path in files:
        assert [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None], path


def test_kustomization_lists_exactly_the_manifests_beside_it(deploy_dir, load_yaml):
    kustomization = load_yaml("kubernetes/kustomization.yaml")
    present = {p.name for p in (deploy_dir / "kubernetes").glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == present


def _mount_of_volume(container, pod, **source):
    """The mount path, in `container`, of the pod's volume with `source` (e.g. secret={"secretName": ...})."""
    [(kind, wanted)] = source.items()
    [volume] = [v for v in pod["volumes"] if kind in v and v[kind].items() >= wanted.items()]
    [mount] = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
    return pathlib.PurePosixPath(mount["mountPath"]), volume


def _c0_options(container):
    from armada_flyte.admin.c0_command import options_from
    from armada_flyte.admin.cli import build_parser

    assert container["command"] == ["armada-flyte", "c0"]
    return options_from(build_parser().parse_args(container["command"][1:] + container["args"]))


def test_connector_runs_armada_flyte_c0_with_the_certificate_of_the_mounted_secret(connector_pod):
    container = _connector_container(connector_pod)
    [script] = [ep for ep in importlib.metadata.entry_points(group="console_scripts") if ep.name == "armada-flyte"]
    assert script.value == "armada_flyte.admin.cli:main"
    options = _c0_options(container)
    folder, _ = _mount_of_volume(container, connector_pod, secret={"secretName": "armada-flyte-connector-tls"})
    assert options.tls is not None and options.tls.client_ca is None  # Flyte's backend sends no client certificate
    assert {options.tls.cert, options.tls.key} == {folder / "tls.crt", folder / "tls.key"}  # a kubernetes.io/tls Secret


def test_armada_flyte_c0_keeps_c0s_own_options():
    from flyte._bin.connect import main

    from armada_flyte.admin import c0_command

    subparsers = argparse.ArgumentParser().add_subparsers()
    c0_command.register(subparsers)
    ours = {opt for action in subparsers.choices["c0"]._actions for opt in action.option_strings}
    c0_options = {opt for param in main.params for opt in param.opts}
    assert c0_options - {"--timeout"} <= ours  # --timeout is c0's "for testing only"


def test_c0_finds_the_armada_connector_through_the_packages_entry_point():
    [entry] = [ep for ep in importlib.metadata.entry_points(group="flyte.connectors") if ep.name == "armada"]
    assert entry.value == "armada_flyte.connector.service"
    entry.load()
    from flyte.connectors import ConnectorRegistry

    assert ConnectorRegistry.get_connector(TASK_TYPE).task_type_name == TASK_TYPE


def test_init_container_runs_the_doctor_from_the_packages_console_script(connector_pod):
    [doctor] = connector_pod["initContainers"]
    assert doctor["command"][:2] == ["armada-flyte", "doctor"]
    [script] = [ep for ep in importlib.metadata.entry_points(group="console_scripts") if ep.name == "armada-flyte"]
    assert script.value == "armada_flyte.admin.cli:main"
    from armada_flyte.admin.cli import build_parser

    build_parser().parse_args(doctor["command"][1:] + doctor.get("args", []))


def test_every_env_var_in_the_manifests_is_a_connector_setting(connector_pod, settings_env_names):
    names = {env["name"] for c in _containers(connector_pod) for env in c.get("env", [])}
    assert names, "the connector gets its settings from env"
    assert names <= settings_env_names, names - settings_env_names


def test_every_secret_key_is_a_connector_setting_the_pod_reads(manifests, connector_pod, settings_env_names):
    secret = manifests["Secret/armada-flyte-connector"]
    keys = set(secret["stringData"])
    assert keys <= settings_env_names
    refs = {
        env["valueFrom"]["secretKeyRef"]["key"]: env["name"]
        for env in _connector_container(connector_pod)["env"]
        if "secretKeyRef" in env.get("valueFrom", {})
    }
    assert keys <= set(refs)
    assert all(key == name for key, name in refs.items())
    assert {"ARMADA_FLYTE_AUTH_TOKEN", "FLYTE_BLOB_ACCESS_KEY", "FLYTE_BLOB_SECRET_KEY"} <= keys


def test_the_node_group_configmap_is_mounted_where_the_setting_points(manifests, connector_pod):
    configmap = manifests["ConfigMap/armada-flyte-node-groups"]
    [volume] = [v for v in connector_pod["volumes"] if v.get("configMap", {}).get("name") == "armada-flyte-node-groups"]
    for container in _containers(connector_pod):
        env = {e["name"]: e.get("value") for e in container["env"]}
        [mount] = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
        path = pathlib.PurePosixPath(env["ARMADA_FLYTE_NODE_GROUPS_FILE"])
        assert str(path.parent) == mount["mountPath"]
        assert path.name in configmap["data"]


def test_the_node_group_configmap_holds_a_valid_node_group_file(manifests):
    data = manifests["ConfigMap/armada-flyte-node-groups"]["data"]["node-groups.yaml"]
    groups = NodeGroups.from_mapping(yaml.safe_load(data))
    assert groups.offered == ["amd64", "arm64"]


def test_probes_ask_the_connector_services_own_grpc_health_on_the_plaintext_health_port(connector_pod):
    """The kubelet's gRPC probes speak no TLS: they go to the health port, which serves health alone."""
    from flyteidl2.connector import service_pb2

    container = _connector_container(connector_pod)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    options = _c0_options(container)
    assert (options.port, options.health_port, options.prometheus_port) == (
        ports["grpc"],
        ports["health"],
        ports["metrics"],
    )
    probe = container["readinessProbe"]["grpc"]
    assert probe["port"] == ports["health"]
    assert probe["service"] == service_pb2.DESCRIPTOR.services_by_name["AsyncConnectorService"].full_name
    assert container["livenessProbe"]["grpc"]["port"] == container["startupProbe"]["grpc"]["port"] == ports["health"]


def test_every_container_has_a_read_only_root_and_tmp_on_an_empty_dir(connector_pod):
    for container in _containers(connector_pod):
        assert container["securityContext"]["readOnlyRootFilesystem"] is True, container["name"]
        folder, volume = _mount_of_volume(container, connector_pod, emptyDir={})
        assert str(folder) == "/tmp", container["name"]
        assert volume["emptyDir"]["sizeLimit"]


def test_the_tls_key_is_readable_by_the_connectors_group_and_nobody_else(connector_pod, deploy_dir):
    pod_security = connector_pod["securityContext"]
    [volume] = [
        v for v in connector_pod["volumes"] if v.get("secret", {}).get("secretName") == "armada-flyte-connector-tls"
    ]
    assert volume["secret"]["defaultMode"] == 0o440
    assert pod_security["fsGroup"] == pod_security["runAsGroup"] == pod_security["runAsUser"]
    assert f"USER {pod_security['runAsUser']}" in (deploy_dir / "connector" / "Dockerfile").read_text()


def test_the_connector_reaches_armada_over_tls_with_the_mounted_ca_and_its_token(connector_pod, monkeypatch):
    from armada_flyte.connector.config.settings import resolve_settings

    container = _connector_container(connector_pod)
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    assert env["ARMADA_FLYTE_ARMADA_TLS"] == "true"
    folder, _ = _mount_of_volume(container, connector_pod, configMap={"name": "armada-ca"})
    assert pathlib.PurePosixPath(env["ARMADA_FLYTE_ARMADA_CA_CERT"]).parent == folder
    for name in ("ARMADA_URL", "ARMADA_FLYTE_ARMADA_TLS", "ARMADA_FLYTE_ARMADA_CA_CERT"):
        monkeypatch.setenv(name, env[name])
    monkeypatch.setenv("ARMADA_FLYTE_AUTH_TOKEN", "token-from-the-secret")
    settings = resolve_settings()  # with TLS the token is allowed to leave the pod
    assert settings.armada_tls and str(settings.armada_ca_cert) == env["ARMADA_FLYTE_ARMADA_CA_CERT"]


def test_service_selects_the_pods_and_exposes_the_grpc_port(manifests):
    service = manifests["Service/armada-flyte-connector"]
    deployment = manifests["Deployment/armada-flyte-connector"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    [port] = [p for p in service["spec"]["ports"] if p["name"] == "grpc"]
    assert port["port"] == 8000 and port["targetPort"] == "grpc"


def test_service_is_headless_so_the_backend_balances_calls_not_connections(manifests):
    """With a cluster IP, the backend's one connection would carry every call to one pod."""
    assert manifests["Service/armada-flyte-connector"]["spec"]["clusterIP"] == "None"


def test_headless_service_ports_are_the_pods_own_ports(manifests, connector_pod):
    """No proxy translates ports for a headless Service: clients dial the pod's port itself."""
    container_ports = {p["name"]: p["containerPort"] for p in _connector_container(connector_pod)["ports"]}
    for port in manifests["Service/armada-flyte-connector"]["spec"]["ports"]:
        assert port["port"] == container_ports[port["targetPort"]], port


def test_the_deployment_runs_more_than_one_replica(manifests):
    assert manifests["Deployment/armada-flyte-connector"]["spec"]["replicas"] >= 2


def test_backend_sends_each_call_to_the_next_connector_pod(load_yaml):
    """Flyte's connector plugin sets round_robin only on its defaultConnector; ours must say it."""
    deployment = load_yaml("flyte/connector-routing.yaml")["plugins"]["connector-service"]["connectors"][TASK_TYPE]
    service_config = json.loads(deployment["defaultServiceConfig"])
    assert service_config["loadBalancingConfig"][0] == {"round_robin": {}}


def test_flyte_routes_task_type_armada_to_the_connector_service(load_yaml, manifests):
    routing = load_yaml("flyte/connector-routing.yaml")
    assert routing["tasks"]["task-plugins"]["default-for-task-types"][TASK_TYPE] == "connector-service"
    plugin = routing["plugins"]["connector-service"]
    connector_id = plugin["connectorForTaskTypes"][TASK_TYPE]
    deployment = plugin["connectors"][connector_id]
    namespace = load_yaml("kubernetes/kustomization.yaml")["namespace"]
    service = manifests["Service/armada-flyte-connector"]
    [port] = [p["port"] for p in service["spec"]["ports"] if p["name"] == "grpc"]
    assert deployment["endpoint"] == f"dns:///{service['metadata']['name']}.{namespace}.svc.cluster.local:{port}"
    assert deployment["insecure"] is False, "armada-flyte c0 serves TLS only"
    assert set(deployment["timeouts"]) <= {"CreateTask", "GetTask", "DeleteTask", "ListConnectors", "GetTaskLogs"}


def test_connector_image_installs_the_connector_extra_and_runs_armada_flyte_c0(deploy_dir):
    dockerfile = (deploy_dir / "connector" / "Dockerfile").read_text()
    assert re.search(r'pip install "\.\[connector\]"', dockerfile)
    assert 'ENTRYPOINT ["armada-flyte", "c0"]' in dockerfile
    assert "USER 10001" in dockerfile
    assert "PYTHONDONTWRITEBYTECODE=1" in dockerfile  # nothing to write beside the code on a read-only root
    for needed in ("pyproject.toml", "src", "arch"):
        assert re.search(rf"^COPY .*\b{needed}\b", dockerfile, re.M), needed


def test_the_backend_trusts_the_connectors_ca_from_a_config_map_beside_its_system_roots(load_yaml):
    values = load_yaml("flyte/backend-trusts-connector-ca.yaml")["deployment"]
    [env] = values["extraEnvVars"]
    [volume] = values["extraVolumes"]
    [mount] = values["extraVolumeMounts"]
    assert env["name"] == "SSL_CERT_DIR"
    assert env["value"].split(":") == ["/etc/ssl/certs", mount["mountPath"]]  # Go reads each folder listed
    assert mount["name"] == volume["name"] and volume["configMap"]["name"] == "armada-flyte-connector-ca"
    assert "secret" not in volume  # never the connector's own Secret: it holds the private key


def test_cert_manager_issues_the_secret_the_deployment_mounts_for_the_name_the_backend_dials(
    deploy_dir, load_yaml, connector_pod
):
    documents = list(yaml.safe_load_all((deploy_dir / "tls" / "cert-manager.yaml").read_text()))
    [serving] = [d for d in documents if d["kind"] == "Certificate" and not d["spec"].get("isCA")]
    assert serving["spec"]["secretName"] == "armada-flyte-connector-tls"
    assert any(v.get("secret", {}).get("secretName") == "armada-flyte-connector-tls" for v in connector_pod["volumes"])
    endpoint = load_yaml("flyte/connector-routing.yaml")["plugins"]["connector-service"]["connectors"][TASK_TYPE][
        "endpoint"
    ]
    host = endpoint.removeprefix("dns:///").rsplit(":", 1)[0]
    assert host in serving["spec"]["dnsNames"]
    assert "server auth" in serving["spec"]["usages"]


@pytest.mark.parametrize("preset", ["gke", "embedded", "generic"])
def test_shipped_armada_configs_pass_the_doctor_for_arch_only_presets(deploy_dir, preset, capsys):
    from armada_flyte.admin.cli import main

    code = main(
        [
            "doctor",
            "--preset",
            preset,
            "--executor-config",
            str(deploy_dir / "armada" / "executor-config.yaml"),
            "--scheduler-config",
            str(deploy_dir / "armada" / "scheduler-config.yaml"),
        ]
    )
    assert code == 0, capsys.readouterr().out


def test_shipped_executor_config_keeps_the_node_id_label_tracked(load_yaml):
    tracked = load_yaml("armada/executor-config.yaml")["kubernetes"]["trackedNodeLabels"]
    assert "kubernetes.io/hostname" in tracked and "kubernetes.io/arch" in tracked


def test_the_connector_pod_gets_no_service_links(manifests):
    """Kubernetes injects ARMADA_FLYTE_CONNECTOR_* variables for a Service of that name with a cluster IP."""
    assert manifests["Deployment/armada-flyte-connector"]["spec"]["template"]["spec"]["enableServiceLinks"] is False


def test_the_services_injected_variables_pass_the_settings_check(manifests, monkeypatch):
    """Where service links stay on (an admin's own manifests), the settings still resolve."""
    from armada_flyte.connector.config.settings import resolve_settings

    injected = service_link_env(manifests["Service/armada-flyte-connector"])
    assert "ARMADA_FLYTE_CONNECTOR_SERVICE_HOST" in injected
    for name, value in injected.items():
        monkeypatch.setenv(name, value)
    assert resolve_settings().armada_url


def test_a_typo_still_fails_beside_the_injected_variables(manifests, monkeypatch):
    from armada_flyte.connector.config.settings import resolve_settings
    from armada_flyte.errors import InvalidConfig

    for name, value in service_link_env(manifests["Service/armada-flyte-connector"]).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ARMADA_FLYTE_CONNECTOR_SERVICE_HOSTS", "10.96.0.12")
    monkeypatch.setenv("ARMADA_FLYTE_POLL_INTERVAL", "3")
    with pytest.raises(InvalidConfig, match="ARMADA_FLYTE_CONNECTOR_SERVICE_HOSTS|ARMADA_FLYTE_POLL_INTERVAL"):
        resolve_settings()


def test_job_pods_blob_secret_is_shipped_named_by_the_deployment_with_the_keys_the_connector_reads(
    connector_pod, load_yaml, monkeypatch
):
    from armada_flyte.connector.config.blob import BlobSettings
    from armada_flyte.connector.config.settings import resolve_settings
    from armada_flyte.connector.submit.pod import blob_env

    secret = load_yaml("armada/job-blob-credentials.yaml")
    env = {e["name"]: e for e in _connector_container(connector_pod)["env"]}
    assert env["ARMADA_FLYTE_BLOB_CREDENTIALS_SECRET"]["value"] == secret["metadata"]["name"]
    for name in ("ARMADA_FLYTE_BLOB_CREDENTIALS_SECRET", "FLYTE_BLOB_ENDPOINT"):
        monkeypatch.setenv(name, env[name]["value"])
    monkeypatch.setenv("FLYTE_BLOB_ACCESS_KEY", "connector-key")
    monkeypatch.setenv("FLYTE_BLOB_SECRET_KEY", "connector-secret")
    pod_env = blob_env(BlobSettings.from_settings(resolve_settings().blob))
    referenced = {e["valueFrom"]["secretKeyRef"]["key"] for e in pod_env if "valueFrom" in e}
    assert referenced == set(secret["stringData"])
    assert "connector-secret" not in str(pod_env)
