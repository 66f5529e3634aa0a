"""A pod's Secret references, as the node agent reads them from the API server before the pod starts."""

from __future__ import annotations

import base64

import pytest

from armada_flyte.cluster.secrets import SecretUnavailable, resolve_pod_secrets
from armada_flyte.node_agent.pod_secrets import secret_names, secret_store
from armada_flyte.node_agent.pod_spec import pod_spec_message

pytestmark = pytest.mark.pure

SPEC = {
    "initContainers": [{"name": "init", "image": "x", "envFrom": [{"secretRef": {"name": "init-env"}}]}],
    "containers": [
        {
            "name": "main",
            "image": "x",
            "env": [
                {"name": "PLAIN", "value": "1"},
                {"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "api_key"}}},
            ],
            "volumeMounts": [{"name": "files", "mountPath": "/etc/files"}],
        }
    ],
    "volumes": [{"name": "files", "secret": {"secretName": "file-secret"}}, {"name": "scratch", "emptyDir": {}}],
}


def test_every_secret_the_pod_names_is_read_and_no_other():
    assert secret_names(pod_spec_message(SPEC)) == {"init-env", "creds", "file-secret"}


def test_the_api_servers_base64_data_becomes_the_values_the_containers_see():
    found = {
        "init-env": {"data": {"A": base64.b64encode(b"a").decode()}},
        "creds": {"data": {"api_key": base64.b64encode(b"k3y").decode()}},
        "file-secret": {"data": {"f.txt": base64.b64encode(b"file").decode()}},
    }
    resolved = resolve_pod_secrets(pod_spec_message(SPEC), secret_store(found), "default")
    assert resolved.of("main").env == {"KEY": "k3y"}
    assert resolved.of("init").env_from == {"A": "a"}
    assert [(f.path, f.data) for f in resolved.of("main").files] == [("/etc/files/f.txt", b"file")]


def test_a_secret_the_api_server_does_not_have_keeps_the_pod_waiting_with_kubernetes_words():
    with pytest.raises(SecretUnavailable, match='secret "init-env" not found'):
        resolve_pod_secrets(pod_spec_message(SPEC), secret_store({}), "default")
