import flyte
import pytest
from google.protobuf import json_format

from armada_flyte import ArmadaConfig, InvalidConfig
from armada_flyte.connector.config.blob import BlobSettings
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.model.identity import RunIdentity
from armada_flyte.connector.submit.execution_context import ExecutionContext
from armada_flyte.connector.submit.plan import SubmitSettings, plan_job
from armada_flyte.connector.submit.pod import runtime_args
from armada_flyte.kube import label_value

from support.flyte_metadata import execution_metadata

pytestmark = pytest.mark.pure


def make_task(config: ArmadaConfig, resources=flyte.Resources(cpu=2, memory="4Gi"), env_vars=None, name="env"):
    env = flyte.TaskEnvironment(name, image="python:3.11", resources=resources, plugin_config=config, env_vars=env_vars)

    @env.task
    async def train(x: int) -> int:
        return x

    return train


def metadata(run="run1", action="a3", attempt=1):
    return execution_metadata(run, action, attempt, task="train", org="org")


def build(template, preset="gke", meta=None, blob=BlobSettings()):
    context = ExecutionContext.of(meta, template, "s3://bucket/raw/run1/a3/1")
    return plan_job(template, SubmitSettings(NodeGroups.preset(preset), blob), context).job


def test_pod_wraps_flytes_rendered_container(serialize):
    job = build(serialize(make_task(ArmadaConfig(architecture="arm64"))), meta=metadata())
    (container,) = job.pod_spec["containers"]
    assert container["image"] == "python:3.11"
    assert container["args"][0] == "a0"
    assert "command" not in container  # the connector never invents a command
    assert container["resources"] == {
        "requests": {"cpu": "2", "memory": "4Gi"},
        "limits": {"cpu": "2", "memory": "4Gi"},
    }
    assert job.pod_spec["restartPolicy"] == "Never"
    assert job.pod_spec["nodeSelector"] == {"kubernetes.io/arch": "arm64"}
    assert job.pod_spec["tolerations"][0]["value"] == "arm64"


def test_backend_placeholders_are_filled_and_required_args_added(serialize):
    job = build(serialize(make_task(ArmadaConfig())), meta=metadata(run="r-42", action="a7"))
    args = job.pod_spec["containers"][0]["args"]
    assert args[args.index("--run-name") + 1] == "r-42"
    assert args[args.index("--name") + 1] == "a7"
    assert args[args.index("--run-base-dir") + 1] == "s3://bucket/raw/run1/a3/1"
    assert args[args.index("--project") + 1] == "proj"
    assert args[args.index("--domain") + 1] == "dev"
    assert args[args.index("--org") + 1] == "org"


def test_complete_args_pass_unchanged():
    args = ["a0", "--run-base-dir", "s3://b/base", "--org", "o", "--project", "p", "--domain", "d", "--run-name", "r"]
    assert runtime_args(args, RunIdentity(org="x", project="y", domain="z", run="q"), "s3://other") == args


def test_blob_store_env_is_injected_and_wins_and_its_keys_come_from_a_secret(serialize):
    task = make_task(
        ArmadaConfig(),
        env_vars={"FLYTE_AWS_ENDPOINT": "http://in-cluster:9000", "FLYTE_STORAGE_RETRIES": "3", "MINE": "1"},
    )
    blob = BlobSettings("http://127.0.0.1:9000", "access-AK1", "secret-SK1", credentials_secret="blob-keys")
    job = build(serialize(task), blob=blob)
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in job.pod_spec["containers"][0]["env"]}
    assert env["FLYTE_AWS_ENDPOINT"] == "http://127.0.0.1:9000"
    assert env["FLYTE_AWS_ACCESS_KEY_ID"] == {
        "secretKeyRef": {"localObjectReference": {"name": "blob-keys"}, "key": "access_key_id"}
    }
    assert env["FLYTE_AWS_SECRET_ACCESS_KEY"] == {
        "secretKeyRef": {"localObjectReference": {"name": "blob-keys"}, "key": "secret_access_key"}
    }
    assert env["MINE"] == "1"
    assert "FLYTE_STORAGE_RETRIES" not in env
    assert "secret-SK1" not in repr(job) and "access-AK1" not in repr(job)


def test_workload_identity_gives_the_pod_the_endpoint_and_no_credentials(serialize):
    blob = BlobSettings("http://127.0.0.1:9000", "ak", "sk", workload_identity=True)
    job = build(serialize(make_task(ArmadaConfig())), blob=blob)
    names = {e["name"] for e in job.pod_spec["containers"][0]["env"]}
    assert "FLYTE_AWS_ENDPOINT" in names
    assert not names & {"FLYTE_AWS_ACCESS_KEY_ID", "FLYTE_AWS_SECRET_ACCESS_KEY"}


def test_no_blob_endpoint_injects_nothing(serialize):
    job = build(serialize(make_task(ArmadaConfig())))
    names = {e["name"] for e in job.pod_spec["containers"][0]["env"]}
    assert not names & {"FLYTE_AWS_ENDPOINT", "FLYTE_AWS_ACCESS_KEY_ID"}


def test_config_cpu_memory_override_flyte_resources(serialize):
    job = build(serialize(make_task(ArmadaConfig(cpu="500m", memory="1Gi"))))
    assert job.pod_spec["containers"][0]["resources"]["limits"] == {"cpu": "500m", "memory": "1Gi"}


def test_limits_are_used_for_both_requests_and_limits(serialize):
    task = make_task(ArmadaConfig(), resources=flyte.Resources(cpu=(1, 2), memory=("1Gi", "2Gi")))
    resources = build(serialize(task)).pod_spec["containers"][0]["resources"]
    assert resources["requests"] == resources["limits"] == {"cpu": "2", "memory": "2Gi"}


@pytest.mark.parametrize("missing", ["cpu", "memory"])
def test_missing_cpu_or_memory_is_a_clear_error(serialize, missing):
    resources = flyte.Resources(memory="1Gi") if missing == "cpu" else flyte.Resources(cpu=1)
    with pytest.raises(InvalidConfig) as info:
        build(serialize(make_task(ArmadaConfig(), resources=resources)))
    assert info.value.field == f"resources.{missing}"
    assert f"flyte.Resources({missing}=...)" in str(info.value)


def test_labels_and_annotations_trace_the_job(serialize):
    job = build(serialize(make_task(ArmadaConfig(architecture="arm64"))), meta=metadata())
    assert job.labels == {
        "flyte.org/connector": "armada",
        "flyte.org/project": "proj",
        "flyte.org/domain": "dev",
        "flyte.org/run": "run1",
        "flyte.org/action": "a3",
        "armada-flyte.io/architecture": "arm64",
    }
    assert job.annotations["armada-flyte.io/architecture-source"] == "task"
    assert job.annotations["armada-flyte.io/node-group"] == "gke-arm"
    assert job.outputs_path == job.annotations["armada-flyte.io/outputs-path"]


def test_client_id_is_stable_per_attempt_and_short(serialize):
    template = serialize(make_task(ArmadaConfig()))
    first, again = build(template, meta=metadata()), build(template, meta=metadata())
    retry = build(template, meta=metadata(attempt=2))
    assert first.client_id == again.client_id != retry.client_id
    assert len(first.client_id) <= 100


def test_gang_annotations_are_scoped_to_the_run(serialize):
    task = make_task(ArmadaConfig(gang_id="train", gang_cardinality=3, architecture="arm64"))
    job = build(serialize(task), meta=metadata(run="r9"))
    assert job.annotations["armadaproject.io/gangId"] == "train-r9"
    assert job.annotations["armadaproject.io/gangCardinality"] == "3"
    assert job.annotations["armadaproject.io/gangNodeUniformityLabel"] == "kubernetes.io/arch"


def test_gang_without_architecture_is_kept_on_one_architecture(serialize):
    task = make_task(ArmadaConfig(gang_id="train", gang_cardinality=2))
    job = build(serialize(task), preset="generic", meta=metadata())
    assert job.annotations["armadaproject.io/gangNodeUniformityLabel"] == "kubernetes.io/arch"


def test_author_uniformity_label_is_kept(serialize):
    task = make_task(
        ArmadaConfig(gang_id="g", gang_cardinality=2, gang_node_uniformity_label="topology.kubernetes.io/zone")
    )
    job = build(serialize(task), preset="generic", meta=metadata())
    assert job.annotations["armadaproject.io/gangNodeUniformityLabel"] == "topology.kubernetes.io/zone"


def test_cardinality_one_is_no_gang(serialize):
    job = build(serialize(make_task(ArmadaConfig(gang_id="g", gang_cardinality=1))), meta=metadata())
    assert not any(k.startswith("armadaproject.io/gang") for k in job.annotations)


def test_label_values_are_made_safe():
    assert label_value("my run/with spaces!") == "my-run-with-spaces"
    assert len(label_value("x" * 100)) == 63


def test_pod_template_target_keeps_its_constraints(serialize):
    from flyteidl2.core import tasks_pb2

    template = serialize(make_task(ArmadaConfig(architecture="arm64")))
    container = json_format.MessageToDict(template.container)
    pod = tasks_pb2.K8sPod(primary_container_name="main")
    json_format.ParseDict(
        {
            "containers": [
                {
                    "name": "main",
                    "image": container["image"],
                    "args": container["args"],
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                    "env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}}],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    "securityContext": {"runAsNonRoot": True},
                }
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "nodeSelector": {"disk": "ssd"},
            "serviceAccountName": "runner",
        },
        pod.pod_spec,
    )
    pod.metadata.labels["team"] = "ml"
    template.ClearField("container")
    template.k8s_pod.CopyFrom(pod)
    job = plan_job(template, SubmitSettings(NodeGroups.preset("gke")), ExecutionContext(output_prefix="s3://b/p")).job
    assert job.pod_spec["nodeSelector"] == {"disk": "ssd", "kubernetes.io/arch": "arm64"}
    assert job.pod_spec["serviceAccountName"] == "runner"
    assert job.pod_spec["containers"][0]["name"] == "main"
    assert job.pod_spec["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert job.labels["team"] == "ml"
    main = job.pod_spec["containers"][0]
    assert {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}} in main["env"]
    assert main["volumeMounts"] == [{"name": "data", "mountPath": "/data"}]
    assert main["securityContext"] == {"runAsNonRoot": True}
    assert job.pod_spec["volumes"] == [{"name": "data", "emptyDir": {}}]


def test_same_arm64_task_takes_each_presets_shape(serialize):
    template = serialize(make_task(ArmadaConfig(architecture="arm64")))
    gke = build(template, preset="gke").pod_spec
    eks = build(template, preset="eks-karpenter").pod_spec
    arm_toleration = {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}
    assert gke["nodeSelector"] == {"kubernetes.io/arch": "arm64"}
    assert gke["tolerations"] == [arm_toleration]
    assert eks["nodeSelector"] == {"kubernetes.io/arch": "arm64", "karpenter.sh/nodepool": "graviton-pool"}
    assert eks["tolerations"] == [arm_toleration]


def test_org_comes_from_the_organization_label_else_a_stand_in(serialize):
    template = serialize(make_task(ArmadaConfig()))
    meta = metadata()
    meta.task_execution_id.node_execution_id.execution_id.org = ""
    meta.labels["organization"] = "acme"
    args = build(template, meta=meta).pod_spec["containers"][0]["args"]
    assert args[args.index("--org") + 1] == "acme"
    del meta.labels["organization"]
    args = build(template, meta=meta).pod_spec["containers"][0]["args"]
    assert args[args.index("--org") + 1] == "default"  # a0 refuses to start without one
