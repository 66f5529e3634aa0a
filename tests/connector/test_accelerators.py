"""GPUs and accelerators: flyte.Resources(gpu=..., shm=...) as Flyte serialises them, placed by the
node-group file's accelerator entries, and run end to end on an embedded cluster with a GPU node group."""

from __future__ import annotations

import pytest
from flyteidl2.core import tasks_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

import armada_flyte
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.model.identity import RunIdentity
from armada_flyte.connector.submit.execution_context import ExecutionContext
from armada_flyte.connector.submit.plan import SubmitSettings, plan_job
from armada_flyte.errors import AcceleratorNotOffered

from support.armada_templates import python_template, run, wait_for

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def gpu_template(
    code: str = "print('gpu')",
    count: str = "1",
    device: str = "nvidia-tesla-a100",
    partition: str | None = None,
    unpartitioned: bool = False,
    shm: str | None = None,
    device_class: int = tasks_pb2.GPUAccelerator.NVIDIA_GPU,
) -> tasks_pb2.TaskTemplate:
    """A template as Flyte writes `flyte.Resources(gpu=flyte.GPU(...), shm=...)` (resources_serde.py)."""
    template = python_template(code)
    if count:
        template.container.resources.requests.add(name=tasks_pb2.Resources.GPU, value=count)  # as Flyte writes it
    if device:
        accelerator = template.extended_resources.gpu_accelerator
        accelerator.device, accelerator.device_class = device, device_class
        if partition:
            accelerator.partition_size = partition
        if unpartitioned:
            accelerator.unpartitioned = True
    if shm is not None:
        template.extended_resources.shared_memory.CopyFrom(
            tasks_pb2.SharedMemory(mount_path="/dev/shm", mount_name="flyte-shm", size_limit=shm)
        )
    return template


def plan(template, preset: str = "gke"):
    identity = RunIdentity(project="p", domain="d", run="r1", action="a0", task="t")
    return plan_job(template, SubmitSettings(NodeGroups.preset(preset)), ExecutionContext(identity, "s3://b/raw"))


@pytest.mark.pure
def test_flytes_own_serialisation_of_gpu_a100_is_what_the_connector_reads():
    import flyte
    from flyte._internal.runtime.resources_serde import get_proto_extended_resources, get_proto_resources

    resources = flyte.Resources(cpu=1, memory="1Gi", gpu=flyte.GPU("A100", 1, partition="1g.5gb"), shm="2Gi")
    extended = get_proto_extended_resources(resources)
    assert extended.gpu_accelerator.device == "nvidia-tesla-a100"
    assert extended.gpu_accelerator.partition_size == "1g.5gb"
    assert extended.shared_memory.size_limit == "2Gi" and extended.shared_memory.mount_path == "/dev/shm"
    assert any(e.name == tasks_pb2.Resources.GPU and e.value == "1" for e in get_proto_resources(resources).requests)


@pytest.mark.pure
def test_gke_a100_selects_the_accelerator_label_and_tolerates_the_gpu_taint():
    job = plan(gpu_template()).job
    spec = job.pod_spec
    assert spec["nodeSelector"] == {
        "kubernetes.io/arch": "amd64",
        "cloud.google.com/gke-accelerator": "nvidia-tesla-a100",
    }
    assert GPU_TOLERATION in spec["tolerations"]
    assert spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert spec["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "1"


@pytest.mark.pure
def test_gke_h100_maps_flytes_device_name_to_gkes_label_value():
    # Flyte writes H100 as nvidia-tesla-h100; GKE labels those nodes nvidia-h100-80gb.
    spec = plan(gpu_template(device="nvidia-tesla-h100")).job.pod_spec
    assert spec["nodeSelector"]["cloud.google.com/gke-accelerator"] == "nvidia-h100-80gb"


@pytest.mark.pure
def test_mig_partition_is_required_by_node_affinity_and_tolerated_as_flytes_pod_plugin_does():
    spec = plan(gpu_template(partition="1g.5gb")).job.pod_spec
    [term] = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert {"key": "cloud.google.com/gke-gpu-partition-size", "operator": "In", "values": ["1g.5gb"]} in term[
        "matchExpressions"
    ]
    assert {
        "key": "cloud.google.com/gke-gpu-partition-size",
        "operator": "Equal",
        "value": "1g.5gb",
        "effect": "NoSchedule",
    } in spec["tolerations"]


@pytest.mark.pure
def test_unpartitioned_asks_for_nodes_without_the_partition_label():
    spec = plan(gpu_template(unpartitioned=True)).job.pod_spec
    [term] = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [{"key": "cloud.google.com/gke-gpu-partition-size", "operator": "DoesNotExist"}]


@pytest.mark.pure
def test_a_partition_the_platform_does_not_offer_fails_naming_the_offered_ones():
    with pytest.raises(AcceleratorNotOffered) as info:
        plan(gpu_template(partition="3g.99gb"))
    assert "3g.99gb" in str(info.value) and "1g.5gb, 2g.10gb" in str(info.value)
    with pytest.raises(AcceleratorNotOffered):  # T4 has no MIG: nothing offered
        plan(gpu_template(device="nvidia-tesla-t4", partition="1g.5gb"))


@pytest.mark.pure
def test_an_accelerator_the_platform_does_not_offer_fails_at_create_naming_what_is_offered():
    with pytest.raises(AcceleratorNotOffered) as info:
        plan(gpu_template(device="nvidia-tesla-k80"))
    message = str(info.value)
    assert "'nvidia-tesla-k80'" in message and "offered: b200, h200, nvidia-a100-80gb" in message
    assert "node-group file" in message
    with pytest.raises(AcceleratorNotOffered, match="offered: none"):
        plan(gpu_template(), preset="generic")


@pytest.mark.pure
def test_a_gpu_count_alone_needs_no_accelerator_entry():
    spec = plan(gpu_template(device="", count="2"), preset="generic").job.pod_spec
    assert spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert spec["tolerations"] == [GPU_TOLERATION]
    assert "nodeSelector" not in spec


@pytest.mark.pure
def test_eks_karpenter_gpu_pool_replaces_the_architecture_groups_node_pool():
    spec = plan(gpu_template(device="nvidia-a10g"), preset="eks-karpenter").job.pod_spec
    assert spec["nodeSelector"] == {
        "kubernetes.io/arch": "amd64",
        "karpenter.sh/nodepool": "gpu-pool",
        "karpenter.k8s.aws/instance-gpu-name": "a10g",
    }


@pytest.mark.pure
def test_other_device_classes_are_counted_in_their_own_resource():
    template = gpu_template(device="nvidia-tesla-a100", device_class=tasks_pb2.GPUAccelerator.AMD_GPU)
    spec = plan(template).job.pod_spec
    limits = spec["containers"][0]["resources"]["limits"]
    assert limits.get("amd.com/gpu") == "1" and "nvidia.com/gpu" not in limits
    assert {"key": "amd.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]


@pytest.mark.pure
def test_shared_memory_is_a_memory_backed_dev_shm_volume():
    spec = plan(gpu_template(device="", count="", shm="2Gi")).job.pod_spec
    assert spec["volumes"] == [
        {"name": "flyte-shm", "volumeSource": {"emptyDir": {"medium": "Memory", "sizeLimit": {"string": "2Gi"}}}}
    ]
    assert spec["containers"][0]["volumeMounts"] == [{"name": "flyte-shm", "mountPath": "/dev/shm"}]
    auto = plan(gpu_template(device="", count="", shm="")).job.pod_spec  # shm="auto": no size limit
    assert auto["volumes"][0]["volumeSource"] == {"emptyDir": {"medium": "Memory"}}


GPU_CLUSTER = {
    "node_sets": [
        {
            "name": "cpu",
            "nodes": 1,
            "labels": {"kubernetes.io/arch": "amd64"},
            "allocatable": {"cpu": "4", "memory": "8Gi"},
        },
        {
            "name": "a100",
            "nodes": 1,
            "labels": {
                "kubernetes.io/arch": "amd64",
                "cloud.google.com/gke-accelerator": "nvidia-tesla-a100",
                "cloud.google.com/gke-gpu-partition-size": "1g.5gb",
            },
            "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
            "allocatable": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "7"},
        },
    ]
}


@pytest.fixture(scope="module")
def gpu_armada():
    from armada_flyte.cluster.cluster_file import Cluster
    from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

    with EmbeddedArmada(EmbeddedConfig(Cluster.from_mapping(GPU_CLUSTER), port=0)) as server:
        yield server


@pytest.fixture
def gpu_connector(gpu_armada):
    from armada_flyte.connector.service import ArmadaConnector

    armada_flyte.configure(armada_url=gpu_armada.url, node_groups_preset="embedded", ack_timeout_seconds=30)
    return ArmadaConnector()


def test_a_mig_gpu_task_with_shared_memory_runs_on_the_gpu_node_group(gpu_armada, gpu_connector):
    import grpc
    from armada_client.armada import job_pb2, job_pb2_grpc

    template = gpu_template("print('on a100')", partition="1g.5gb", shm="1Gi")
    meta = run(gpu_connector.create(template, "s3://bucket/raw/gpu/a0/0"))
    resource = run(wait_for(gpu_connector, meta, {TaskExecution.SUCCEEDED, TaskExecution.FAILED}))
    assert resource.phase == TaskExecution.SUCCEEDED, resource.message
    assert gpu_armada.job(meta.job_id).node_group == "a100"
    with grpc.insecure_channel(gpu_armada.url) as channel:
        request = job_pb2.JobDetailsRequest(job_ids=[meta.job_id], expand_job_spec=True)
        job = job_pb2_grpc.JobsStub(channel).GetJobDetails(request, timeout=10).job_details[meta.job_id].job_spec
    pod = job.pod_spec
    assert pod.containers[0].resources.limits["nvidia.com/gpu"].string == "1"
    assert pod.volumes[0].volumeSource.emptyDir.medium == "Memory"
    assert pod.containers[0].volumeMounts[0].mountPath == "/dev/shm"
    assert any(t.key == "nvidia.com/gpu" and t.operator == "Exists" for t in pod.tolerations)


def test_a_gpu_task_asking_for_more_gpus_than_any_node_has_is_rejected_naming_the_shortfall(gpu_armada, gpu_connector):
    meta = run(gpu_connector.create(gpu_template("pass", count="8"), "s3://bucket/raw/gpu/a1/0"))
    resource = run(wait_for(gpu_connector, meta, {TaskExecution.FAILED}))
    assert "rejected" in resource.message
    assert "pod requires 8 nvidia.com/gpu, but only 7 is available" in resource.message


def test_a_gpu_task_on_a_cluster_without_gpu_nodes_is_rejected(armada, connector):
    # The default embedded cluster has no GPU nodes: the node selector can't match, as on a real cluster.
    meta = run(connector.create(gpu_template("pass"), "s3://bucket/raw/gpu/a2/0"))
    resource = run(wait_for(connector, meta, {TaskExecution.FAILED}))
    assert "label cloud.google.com/gke-accelerator not set" in resource.message


@pytest.mark.pure
def test_accelerator_entries_are_validated_when_the_file_is_read():
    from armada_flyte.errors import InvalidConfig

    base = {"architectures": {"amd64": {}}}
    with pytest.raises(InvalidConfig, match="partition_label"):
        NodeGroups.from_mapping({**base, "accelerators": {"nvidia-l4": {"partitions": ["1g.5gb"]}}})
    with pytest.raises(InvalidConfig, match="listed twice"):
        NodeGroups.from_mapping({**base, "accelerators": {"L4": {}, "l4": {}}})
    with pytest.raises(InvalidConfig, match="node_selector"):
        NodeGroups.from_mapping({**base, "accelerators": {"l4": {"node_selector": {"gpu": "has space"}}}})
    groups = NodeGroups.from_mapping({**base, "accelerators": {"NVIDIA-L4": {}}})
    assert groups.accelerator_for("nvidia-L4") is groups.accelerators["nvidia-l4"]  # case is ignored
