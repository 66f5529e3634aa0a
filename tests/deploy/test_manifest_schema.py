"""The shipped manifests against Kubernetes' own API types: decoded strictly (an unknown or misspelt field, a
key written twice, a value of the wrong type fails) by tests/deploy/go/manifestcheck, which then checks each
NetworkPolicy as the API server's validation would. No API server or CNI runs here; this is the check a
`kubectl apply --validate=strict` would make before one enforced anything."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest
import yaml

from support.real_parts import missing_part

pytestmark = pytest.mark.timeout(1200)  # the first build of the checker


def check(manifest_check: pathlib.Path, *files: pathlib.Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(manifest_check), *map(str, files)], capture_output=True, text=True, timeout=60)


def test_every_shipped_manifest_decodes_strictly_into_kubernetes_api_types(manifest_check, deploy_dir, manifests):
    files = sorted(set((deploy_dir / "kubernetes").glob("*.yaml")) - {deploy_dir / "kubernetes" / "kustomization.yaml"})
    result = check(manifest_check, *files, deploy_dir / "armada" / "job-blob-credentials.yaml")
    assert result.returncode == 0, result.stderr
    checked = set(result.stdout.split("ok ")[1:])
    assert {line.strip() for line in checked} >= set(manifests)


def test_the_backends_ca_values_are_valid_fields_of_the_backends_pod(manifest_check, load_yaml, tmp_path):
    """The flyte-binary chart puts these values into its pod's container and volumes, as they are."""
    values = load_yaml("flyte/backend-trusts-connector-ca.yaml")["deployment"]
    container = {"name": "flyte", "image": "flyte", "env": values["extraEnvVars"]}
    container["volumeMounts"] = values["extraVolumeMounts"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "flyte-binary"}}
    pod["spec"] = {"containers": [container], "volumes": values["extraVolumes"]}
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(pod))
    result = check(manifest_check, tmp_path / "pod.yaml")
    assert result.returncode == 0, result.stderr


BREAKAGES = {
    "misspelt field": ("  policyTypes:", "  policyType:", 'unknown field "spec.policyType"'),
    "field in another case": (
        "- namespaceSelector:",
        "- NamespaceSelector:",
        'unknown field "spec.ingress[0].from[0].NamespaceSelector"',
    ),
    "key written twice": ("  policyTypes:", "  podSelector: {}\n  policyTypes:", 'key "podSelector" already set'),
    "port out of range": ("port: 8000", "port: 80000", "ports[0].port: 80000: must be between 1 and 65535"),
    "port number as text": ("port: 8000", 'port: "8000"', 'ports[0].port: "8000": must contain at least one letter'),
    "protocol in lower case": ("protocol: TCP", "protocol: tcp", '"tcp" is not TCP, UDP or SCTP'),
    "label value with a space": (
        "kubernetes.io/metadata.name: flyte",
        'kubernetes.io/metadata.name: "fly te"',
        "namespaceSelector: values[0][kubernetes.io/metadata.name]: Invalid value",
    ),
    "policy type misspelt": ("    - Ingress", "    - Ingres", '"Ingres" is not Ingress or Egress'),
    "ipBlock beside a selector": (
        "        - namespaceSelector:\n            matchLabels:\n              kubernetes.io/metadata.name: monitoring",
        "        - ipBlock: {cidr: 10.0.0.0/8}\n          namespaceSelector:\n            matchLabels:\n"
        "              kubernetes.io/metadata.name: monitoring",
        "ipBlock goes alone",
    ),
}


@pytest.mark.parametrize("old, new, expected", BREAKAGES.values(), ids=BREAKAGES.keys())
def test_the_check_fails_a_broken_network_policy_naming_the_field(
    manifest_check, deploy_dir, tmp_path, old, new, expected
):
    shipped = (deploy_dir / "kubernetes" / "networkpolicy.yaml").read_text()
    assert old in shipped, f"the shipped policy changed: {old!r} is no longer in it"
    broken = tmp_path / "networkpolicy.yaml"
    broken.write_text(shipped.replace(old, new, 1))
    result = check(manifest_check, broken)
    assert result.returncode == 1
    assert expected in result.stderr, result.stderr


def test_what_kustomize_renders_from_deploy_kubernetes_decodes_strictly_too(manifest_check, deploy_dir, tmp_path):
    """What `kubectl apply -k deploy/kubernetes` would send, built offline by kubectl's own kustomize."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        missing_part("kubectl (Debian's kubernetes-client) renders the kustomization")
    rendered = subprocess.run(
        [kubectl, "kustomize", str(deploy_dir / "kubernetes")], capture_output=True, text=True, timeout=60
    )
    assert rendered.returncode == 0, rendered.stderr
    (tmp_path / "rendered.yaml").write_text(rendered.stdout)
    result = check(manifest_check, tmp_path / "rendered.yaml")
    assert result.returncode == 0, result.stderr
    assert "ok NetworkPolicy/armada-flyte-connector" in result.stdout.splitlines()
    namespaces = {doc["metadata"]["namespace"] for doc in yaml.safe_load_all(rendered.stdout)}
    assert namespaces == {"flyte"}  # the namespace the policy's executor peer and the routing name
