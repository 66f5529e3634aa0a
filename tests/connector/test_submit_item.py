"""A job's pod spec becomes Kubernetes' PodSpec proto through the message constructor (fast), and
the result is byte for byte what json_format builds; where the constructor refuses a value,
json_format decides, and a pod spec neither can hold is a typed error naming it."""

from __future__ import annotations

import asyncio

import pytest
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1
from google.protobuf import json_format

from armada_flyte.connector.armada.api import ArmadaApi
from armada_flyte.connector.armada.submit_items import _quantities, pod_spec_message
from armada_flyte.connector.config.settings import resolve_settings
from armada_flyte.connector.model.job_request import JobRequest
from armada_flyte.errors import InvalidConfig

QUANTITY = {"cpu": "10m", "memory": "16Mi"}
PLAIN = {
    "containers": [
        {
            "name": "armada-task",
            "image": "python:3.11-slim",
            "args": ["a0", "--inputs", "s3://b/in", "--outputs-path", "s3://b/out"],
            "env": [{"name": "FLYTE_ATTEMPT_NUMBER", "value": "0"}],
            "imagePullPolicy": "IfNotPresent",
            "resources": {"requests": QUANTITY, "limits": QUANTITY},
        }
    ],
    "restartPolicy": "Never",
    "activeDeadlineSeconds": 30,
    "nodeSelector": {"kubernetes.io/arch": "arm64"},
    "tolerations": [{"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}],
    "priorityClassName": "armada-default",
    "serviceAccountName": "runner",
}
FROM_POD_TEMPLATE = {  # what MessageToDict makes of a pod template's Struct: every number a float
    **PLAIN,
    "activeDeadlineSeconds": 30.0,
    "hostNetwork": False,
    "securityContext": {"runAsUser": 1000.0, "fsGroup": 2000.0},
    "volumes": [
        {"name": "scratch", "volumeSource": {"emptyDir": {"medium": "Memory", "sizeLimit": {"string": "1Gi"}}}},
        {"name": "creds", "volumeSource": {"secret": {"secretName": "s", "items": [{"key": "k", "path": "p"}]}}},
    ],
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]}
                ]
            }
        }
    },
    "containers": [
        {
            **PLAIN["containers"][0],
            "ports": [{"containerPort": 8080.0, "protocol": "TCP"}],
            "volumeMounts": [{"name": "scratch", "mountPath": "/scratch", "readOnly": True}],
            "securityContext": {"privileged": False, "runAsNonRoot": True},
        }
    ],
}


@pytest.mark.pure
@pytest.mark.parametrize(
    "pod_spec", [PLAIN, FROM_POD_TEMPLATE, {"containers": [{}]}], ids=["plain", "template", "bare"]
)
def test_the_pod_spec_proto_is_what_json_format_builds(pod_spec):
    expected = json_format.ParseDict(_quantities(pod_spec), core_v1.PodSpec())
    built = pod_spec_message(pod_spec)
    assert built.SerializeToString(deterministic=True) == expected.SerializeToString(deterministic=True)
    assert built == expected


@pytest.mark.pure
def test_a_pod_spec_kubernetes_cannot_hold_is_named():
    with pytest.raises(InvalidConfig) as refused:
        pod_spec_message({**PLAIN, "volumes": [{"name": "v", "emptyDir": {}}]})
    assert refused.value.field == "pod_template"
    assert "emptyDir" in str(refused.value)


def test_a_bad_pod_spec_fails_only_its_own_create():
    from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

    def job(n: int, pod_spec: dict) -> JobRequest:
        return JobRequest(pod_spec, {}, {}, "default", 0, f"item-test-{n}", "")

    with EmbeddedArmada(EmbeddedConfig(port=0, queues=("flyte",), paused=True)) as armada:
        api = ArmadaApi(resolve_settings(armada_url=armada.url, submit_batch_window_seconds=0.05))

        async def create_all() -> list:
            jobs = [job(n, PLAIN) for n in range(10)] + [job(99, {**PLAIN, "noSuchField": 1})]
            return await asyncio.gather(*(api.submit_one("flyte", "items", j) for j in jobs), return_exceptions=True)

        *good, refused = asyncio.run(create_all())
        assert all(isinstance(job_id, str) and armada.job(job_id) is not None for job_id in good)
        assert isinstance(refused, InvalidConfig) and "noSuchField" in str(refused)
        assert armada.calls.count("SubmitJobs") == 1  # the good ones still shared one call
