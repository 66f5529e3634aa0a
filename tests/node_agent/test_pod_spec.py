"""The API server's pod spec (JSON) becomes the PodSpec message the pod runner reads, whole."""

from __future__ import annotations

import pytest

from armada_flyte.kube import container_requests
from armada_flyte.node_agent.pod_spec import pod_spec_message

pytestmark = pytest.mark.pure


def spec(**fields: object) -> dict:
    container = {"name": "main", "image": "python:3.11-slim", "command": ["python", "-c", "print(1)"]}
    return {"containers": [{**container, **fields.pop("container", {})}], **fields}


def test_quantities_become_the_runners_resources():
    message = pod_spec_message(spec(container={"resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}))
    assert container_requests(message.containers[0]) == {"cpu": 2000, "memory": 1024**3 * 1000}


def test_a_volumes_source_given_inline_lands_in_the_source():
    message = pod_spec_message(
        spec(volumes=[{"name": "creds", "secret": {"secretName": "blob", "defaultMode": 0o400}}])
    )
    assert message.volumes[0].volumeSource.secret.secretName == "blob"
    assert message.volumes[0].volumeSource.secret.defaultMode == 0o400


def test_secret_references_keep_the_secrets_name():
    env = [{"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "api_key"}}}]
    message = pod_spec_message(spec(container={"env": env, "envFrom": [{"secretRef": {"name": "all"}}]}))
    container = message.containers[0]
    assert container.env[0].valueFrom.secretKeyRef.localObjectReference.name == "creds"
    assert container.envFrom[0].secretRef.localObjectReference.name == "all"


def test_an_int_or_string_port_keeps_its_kind():
    probe = {"httpGet": {"port": 8080, "path": "/"}}
    named = {"httpGet": {"port": "http", "path": "/"}}
    message = pod_spec_message(spec(container={"livenessProbe": probe, "readinessProbe": named}))
    assert message.containers[0].livenessProbe.handler.httpGet.port.intVal == 8080
    assert message.containers[0].readinessProbe.handler.httpGet.port.strVal == "http"


def test_what_the_scheduler_and_admission_set_comes_through():
    toleration = {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}
    message = pod_spec_message(
        spec(
            nodeSelector={"kubernetes.io/arch": "arm64"},
            tolerations=[toleration],
            activeDeadlineSeconds=30,
            terminationGracePeriodSeconds=1,
            serviceAccountName="default",
        )
    )
    assert dict(message.nodeSelector) == {"kubernetes.io/arch": "arm64"}
    assert message.tolerations[0].value == "arm64"
    assert (message.activeDeadlineSeconds, message.terminationGracePeriodSeconds) == (30, 1)


def test_fields_newer_than_the_protos_are_dropped_not_refused():
    message = pod_spec_message(spec(resourceClaims=[{"name": "gpu"}], container={"resizePolicy": [{"x": 1}]}))
    assert message.containers[0].name == "main"
