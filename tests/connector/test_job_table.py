"""PURE (no server, process or socket): what a create submits, as one table.

`plan_job(template, settings, context, image_in_registry)` is the one pass from a task template to
its Armada jobs. Each row names its inputs (the template's kind, the node-group preset, the backend's
context, the blob store, the registry's answer) and what the job must carry, by path into the job
(`pod_spec.nodeSelector`, `labels.<key>`, `steps.1.client_id`, ...), or the error that refuses it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional, Union

import pytest
from flyteidl2.core import tasks_pb2
from google.protobuf import json_format

from armada_flyte import ArmadaConfig
from armada_flyte.architecture import Architecture
from armada_flyte.connector.config.blob import BlobSettings
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.config.settings_groups import Tenancy
from armada_flyte.connector.submit.execution_context import ExecutionContext
from armada_flyte.connector.submit.placement import ImageArchitectures
from armada_flyte.connector.submit.plan import JobPlan, SubmitSettings, plan_job
from armada_flyte.errors import ArchitectureNotOffered, InvalidConfig, TenancyRefused

from support.armada_templates import execution_metadata, python_template

pytestmark = pytest.mark.pure

A0 = ["a0", "--inputs", "s3://b/{{.runName}}/in.pb", "--outputs-path", "s3://b/{{.runName}}/{{.actionName}}"]
ARM_TAINT = {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}


def a0(config: ArmadaConfig = ArmadaConfig(), timeout: int = 0) -> tasks_pb2.TaskTemplate:
    """A task as Flyte renders it: a0 args with the backend's placeholders, an env var of its own."""
    template = python_template("print(1)", config)
    del template.container.command[:]
    template.container.args.extend(A0)
    template.container.env.add(key="MODE", value="train")
    template.metadata.timeout.seconds = timeout
    return template


def with_shm(template: tasks_pb2.TaskTemplate) -> tasks_pb2.TaskTemplate:
    template.extended_resources.shared_memory.CopyFrom(tasks_pb2.SharedMemory(mount_path="/dev/shm", size_limit="1Gi"))
    return template


def with_gpu_and_shm(template: tasks_pb2.TaskTemplate) -> tasks_pb2.TaskTemplate:
    template.container.resources.requests.add(name=tasks_pb2.Resources.GPU, value="1")
    template.extended_resources.gpu_accelerator.device = "nvidia-tesla-a100"
    return with_shm(template)


def with_secrets(template: tasks_pb2.TaskTemplate, env_var: str = "DB_PASSWORD") -> tasks_pb2.TaskTemplate:
    template.security_context.secrets.add(group="db", key="password", mount_requirement=1, env_var=env_var)
    template.security_context.secrets.add(group="certs", key="ca.crt", mount_requirement=2)
    return template


def with_pod_template(template: tasks_pb2.TaskTemplate, mount: str = "/data") -> tasks_pb2.TaskTemplate:
    container = json_format.MessageToDict(template.container)
    pod = tasks_pb2.K8sPod(primary_container_name="main")
    spec = {
        "containers": [
            {
                "name": "main",
                "image": container["image"],
                "args": container["args"],
                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                "volumeMounts": [{"name": "data", "mountPath": mount}],
                "securityContext": {"runAsNonRoot": True},
            }
        ],
        "volumes": [{"name": "data", "volumeSource": {"emptyDir": {}}}],
        "nodeSelector": {"disk": "ssd"},
        "serviceAccountName": "runner",
    }
    json_format.ParseDict(spec, pod.pod_spec)
    pod.metadata.labels["team"] = "ml"
    template.ClearField("container")
    template.k8s_pod.CopyFrom(pod)
    return template


def backend(namespace: str = "proj-dev", **fields: Any) -> Any:
    """The backend's metadata for attempt 1 of action a3 in run r1 of project proj, domain dev."""
    metadata = execution_metadata("r1", "a3", 1, task="train", org="org")
    metadata.namespace = namespace
    metadata.labels.update({"team": "ml", "armada-flyte.io/architecture": "spoofed"})
    metadata.annotations.update({"note": "from flyte"})
    metadata.environment_variables.update({"BACKEND": "1"})
    for name, value in fields.items():
        setattr(metadata, name, value)
    return metadata


@dataclass(frozen=True)
class Case:
    name: str
    template: Callable[[], tasks_pb2.TaskTemplate]
    expect: dict[str, Any] = field(default_factory=dict)
    """path -> value the job has there (a callable: a check of that value)."""
    preset: Union[str, dict[str, Any]] = "gke"
    """A node-group preset, or a node-group file's content."""
    metadata: Optional[Callable[[], Any]] = None
    blob: BlobSettings = BlobSettings()
    namespace_template: Optional[str] = None
    tenancy: Tenancy = Tenancy()
    """The admin's tenancy policy (backend runs)."""
    registry: tuple[Architecture, ...] = ()
    """The image's architectures as its registry lists them (empty: not asked)."""
    refused: Optional[tuple[type, str]] = None
    """The error type and the field it names."""

    def __str__(self) -> str:
        return self.name


def env_of(entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in entries}


def has(*items: Any) -> Callable[[Any], bool]:
    return lambda found: all(item in found for item in items)


ENV = "pod_spec.containers.0.env"
MOUNTS = "pod_spec.containers.0.volumeMounts"

CASES = [
    Case(
        "a plain container goes to the platform's default architecture",
        lambda: python_template("print(1)"),
        {
            "pod_spec.nodeSelector": {"kubernetes.io/arch": "amd64"},
            "pod_spec.restartPolicy": "Never",
            "pod_spec.containers.0.resources.requests": {"cpu": "100m", "memory": "64Mi"},
            "pod_spec.containers.0.resources.limits": {"cpu": "100m", "memory": "64Mi"},
            "annotations.armada-flyte.io/architecture-source": "platform",
            "namespace": "default",
            "job_set": "flyte-local",
        },
    ),
    Case(
        "a pinned architecture gets its node group's selector and toleration",
        lambda: a0(ArmadaConfig(architecture="arm64", priority=3.0)),
        {
            "pod_spec.nodeSelector": {"kubernetes.io/arch": "arm64"},
            "pod_spec.tolerations": [ARM_TAINT],
            "labels.armada-flyte.io/architecture": "arm64",
            "annotations.armada-flyte.io/node-group": "gke-arm",
            "priority": 3.0,
        },
    ),
    Case(
        "`any` may land on each offered architecture",
        lambda: a0(ArmadaConfig(architecture="any")),
        {
            "labels.armada-flyte.io/architecture": "any",
            "annotations.armada-flyte.io/architectures": "amd64,arm64",
            "pod_spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]}]}
            ],
        },
        preset="embedded",
    ),
    Case(
        "`any` narrowed by the image's registry to what the image has",
        lambda: a0(ArmadaConfig(architecture="any")),
        {
            "pod_spec.nodeSelector": {"kubernetes.io/arch": "arm64"},
            "annotations.armada-flyte.io/architectures": "arm64",
        },
        preset="embedded",
        registry=(Architecture.arm64,),
    ),
    Case(
        "a preference builds every step's job, in a job set of the task's own",
        lambda: a0(ArmadaConfig(architecture=["arm64", "amd64"], spill_after=30)),
        {
            "steps": 2,
            "pod_spec.nodeSelector": {"kubernetes.io/arch": "arm64"},
            "steps.1.pod_spec.nodeSelector": {"kubernetes.io/arch": "amd64"},
            "steps.1.labels.armada-flyte.io/architecture": "amd64",
            "steps.1.client_id": lambda found: found.endswith("-1amd64"),
            "job_set": lambda found: found.startswith("flyte-r1-prefer-"),
            "spill_after": 30.0,
        },
        metadata=backend,
    ),
    Case(
        "a gang's members are scoped to the run and kept on one architecture",
        lambda: a0(ArmadaConfig(gang_id="g", gang_cardinality=2)),
        {
            "gang_id": "g-r1",
            "annotations.armadaproject.io/gangId": "g-r1",
            "annotations.armadaproject.io/gangCardinality": "2",
            "annotations.armadaproject.io/gangNodeUniformityLabel": "kubernetes.io/arch",
        },
        metadata=backend,
    ),
    Case(
        "a GPU and shared memory: the accelerator's nodes and a memory volume",
        lambda: with_gpu_and_shm(a0()),
        {
            "pod_spec.containers.0.resources.limits.nvidia.com/gpu": "1",
            "pod_spec.nodeSelector.cloud.google.com/gke-accelerator": "nvidia-tesla-a100",
            "pod_spec.volumes": has(
                {
                    "name": "flyte-shm",
                    "volumeSource": {"emptyDir": {"medium": "Memory", "sizeLimit": {"string": "1Gi"}}},
                }
            ),
            MOUNTS: has({"name": "flyte-shm", "mountPath": "/dev/shm"}),
        },
    ),
    Case(
        "secrets as Flyte's injector names them: env from the Secret, files in its volume",
        lambda: with_secrets(a0()),
        {
            ENV: lambda env: (
                env_of(env)["_UNION_DB_PASSWORD"]
                == {"secretKeyRef": {"localObjectReference": {"name": "db"}, "key": "password"}}
            ),
            MOUNTS: lambda mounts: (
                [(m["mountPath"], m["readOnly"]) for m in mounts] == [("/etc/flyte/secrets/certs", True)]
            ),
            "pod_spec.volumes.0.volumeSource.secret": {
                "secretName": "certs",
                "items": [{"key": "ca.crt", "path": "ca.crt"}],
            },
        },
    ),
    Case(
        "the backend's run, namespace, labels, annotations, env and service account",
        lambda: a0(),
        {
            "namespace": "proj-dev",
            "labels.team": "ml",
            "labels.armada-flyte.io/architecture": "amd64",  # the backend may not set the connector's own
            "labels.flyte.org/run": "r1",
            "annotations.note": "from flyte",
            "pod_spec.serviceAccountName": "flyte-sa",
            ENV: lambda env: env_of(env)["BACKEND"] == "1" and env_of(env)["FLYTE_ATTEMPT_NUMBER"] == "1",
            "pod_spec.containers.0.args": has("--run-base-dir", "s3://b/r1/in.pb", "s3://b/r1/a3"),
            "external_job_uri": "flyte://org/proj/dev/r1/a3/1",
            "namespace_source": "backend",
        },
        metadata=lambda: backend(k8s_service_account="flyte-sa"),
    ),
    Case(
        "the admin's namespace template over the backend's namespace",
        lambda: a0(),
        {"namespace": "proj-dev-jobs", "namespace_source": "admin"},
        metadata=lambda: backend(namespace="ignored"),
        namespace_template="{project}-{domain}-jobs",
    ),
    Case(
        "the task's own namespace wins where the admin allows it",
        lambda: python_template("pass", ArmadaConfig(namespace="mine"), sources={"namespace": "project"}),
        {"namespace": "mine", "namespace_source": "project"},
        metadata=backend,
        namespace_template="{project}-{domain}",
        tenancy=Tenancy(allowed_namespaces=("mine",)),
    ),
    Case(
        "an interruptible attempt gets the spot class and tolerations",
        lambda: a0(),
        {
            "pod_spec.priorityClassName": "armada-preemptible",
            "pod_spec.tolerations": has(
                {
                    "key": "kubernetes.azure.com/scalesetpriority",
                    "operator": "Equal",
                    "value": "spot",
                    "effect": "NoSchedule",
                }
            ),
        },
        preset="aks",
        metadata=lambda: backend(interruptible=True),
    ),
    Case(
        "the blob store's endpoint wins over the task's and its keys come from a Secret",
        lambda: a0(),
        {
            ENV: lambda env: (
                env_of(env)["FLYTE_AWS_ENDPOINT"] == "http://s3:9000"
                and env_of(env)["FLYTE_AWS_SECRET_ACCESS_KEY"]
                == {"secretKeyRef": {"localObjectReference": {"name": "blob"}, "key": "secret_access_key"}}
            ),
        },
        blob=BlobSettings("http://s3:9000", "ak", "sk", credentials_secret="blob"),
    ),
    Case(
        "a timeout becomes the pod's deadline",
        lambda: a0(timeout=90),
        {"pod_spec.activeDeadlineSeconds": 90},
    ),
    Case(
        "a pod template keeps its own constraints, container fields and service account",
        lambda: with_pod_template(a0(ArmadaConfig(architecture="arm64"))),
        {
            "pod_spec.nodeSelector": {"disk": "ssd", "kubernetes.io/arch": "arm64"},
            "pod_spec.serviceAccountName": "runner",
            "pod_spec.containers.0.name": "main",
            "pod_spec.containers.0.securityContext": {"runAsNonRoot": True},
            MOUNTS: [{"name": "data", "mountPath": "/data"}],
            "labels.team": "ml",
        },
        metadata=lambda: backend(k8s_service_account="flyte-sa"),
        tenancy=Tenancy(allow_privileged_pod_templates=True),
    ),
    # ---- refused, naming the field ----
    Case(
        "a backend task's own namespace, unless the admin allows it",
        lambda: python_template("pass", ArmadaConfig(namespace="mine"), sources={"namespace": "project"}),
        metadata=backend,
        refused=(TenancyRefused, "allowed_namespaces"),
    ),
    Case(
        "a backend task's pod template naming its own service account, unless the admin allows it",
        lambda: with_pod_template(a0()),
        metadata=lambda: backend(k8s_service_account="flyte-sa"),
        refused=(TenancyRefused, "allow_privileged_pod_templates"),
    ),
    Case(
        "a secret may not take the name a0 reads the blob store from",
        lambda: with_secrets(a0(), env_var="FLYTE_AWS_ENDPOINT"),
        blob=BlobSettings("http://s3:9000", credentials_secret="blob"),
        refused=(InvalidConfig, "flyte.Secret.as_env_var"),
    ),
    Case(
        "shared memory may not replace the pod template's own mount",
        lambda: with_shm(with_pod_template(a0(), mount="/dev/shm")),
        refused=(InvalidConfig, "pod_template.volumeMounts"),
    ),
    Case(
        "an architecture the platform lacks",
        lambda: a0(ArmadaConfig(architecture="arm64")),
        preset={"architectures": {"amd64": {}}},
        refused=(ArchitectureNotOffered, "offered: amd64"),
    ),
    Case(
        "an invalid namespace from the backend",
        lambda: a0(),
        metadata=lambda: backend(namespace="Not_A_Namespace"),
        refused=(InvalidConfig, "task_execution_metadata.namespace"),
    ),
    Case(
        "an invalid service account from the backend",
        lambda: a0(),
        metadata=lambda: backend(k8s_service_account="Bad Account"),
        refused=(InvalidConfig, "service account"),
    ),
]


def planned(case: Case) -> JobPlan:
    template = case.template()
    context = ExecutionContext.of(case.metadata() if case.metadata else None, template, "s3://b/raw/r1/a3/1")
    groups = NodeGroups.preset(case.preset) if isinstance(case.preset, str) else NodeGroups.from_mapping(case.preset)
    settings = SubmitSettings(groups, case.blob, namespace_template=case.namespace_template, tenancy=case.tenancy)
    image = ImageArchitectures(template.container.image, case.registry, "its registry") if case.registry else None
    return plan_job(template, settings, context, image)


def at(plan: JobPlan, path: str) -> Any:
    """The value at `path`: a job field (of `steps.N.` or the first step's job), or a plan field; keys with
    dots (`nvidia.com/gpu`) are matched whole."""
    tops = {"steps": len(plan.steps), "job_set": plan.job_set_id, "spill_after": plan.spill_after}
    tops["namespace_source"] = plan.namespace_source
    if path in tops:
        return tops[path]
    job: Any = plan.job
    if path.startswith("steps."):
        _, index, path = path.split(".", 2)
        job = plan.steps[int(index)].job
    head, _, rest = path.partition(".")
    value = getattr(job, head)
    while rest:
        if isinstance(value, list):
            index, _, rest = rest.partition(".")
            value = value[int(index)]
            continue
        key = next((k for k in sorted(value, key=len, reverse=True) if rest == k or rest.startswith(k + ".")), None)
        assert key is not None, f"{path}: nothing at {rest!r} in {value}"
        value, rest = value[key], rest[len(key) + 1 :]
    return value


@pytest.mark.parametrize("case", CASES, ids=str)
def test_what_create_submits(case: Case):
    if case.refused is not None:
        kind, name = case.refused
        with pytest.raises(kind) as refused:
            planned(case)
        assert name in str(refused.value)
        return
    plan = planned(case)
    for path, expected in case.expect.items():
        found = at(plan, path)
        if callable(expected):
            assert expected(found), f"{path}: {found}"
        else:
            assert found == expected, path


def test_planning_is_pure_the_template_is_untouched_and_a_plan_again_is_the_same():
    template = with_secrets(with_gpu_and_shm(a0(ArmadaConfig(architecture=["arm64", "amd64"]))))
    before = template.SerializeToString(deterministic=True)
    settings = SubmitSettings(NodeGroups.preset("gke"), BlobSettings("http://s3:9000", credentials_secret="blob"))
    context = ExecutionContext.of(backend(), template, "s3://b/raw/r1/a3/1")
    first, again = plan_job(template, settings, context), plan_job(template, settings, context)
    assert first == again
    assert template.SerializeToString(deterministic=True) == before
    retried = replace(context, identity=replace(context.identity, attempt=2))
    other = plan_job(template, settings, retried)
    assert other.job.client_id != first.job.client_id and other.steps[0].placement == first.steps[0].placement
