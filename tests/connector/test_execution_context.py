"""The execution context's rules, pure: which namespace wins, what local runs keep, what is refused."""

from __future__ import annotations

from dataclasses import replace

import pytest

import armada_flyte
from armada_flyte import ArmadaConfig
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.config.settings import resolve_settings
from armada_flyte.connector.config.settings_groups import Tenancy
from armada_flyte.connector.model.identity import RunIdentity
from armada_flyte.connector.submit.execution_context import ExecutionContext
from armada_flyte.connector.submit.placement import Placement
from armada_flyte.connector.submit.plan import SubmitSettings, plan_job
from armada_flyte.errors import InvalidConfig

from support.armada_templates import execution_metadata, python_template

pytestmark = pytest.mark.pure

IDENTITY = RunIdentity(project="proj", domain="dev", run="r1", action="a0", task="t")


def plan(template, metadata=None, namespace_template=None, preset="embedded", tenancy=Tenancy()):
    context = replace(ExecutionContext.of(metadata, template, "s3://b/raw"), identity=IDENTITY)
    settings = SubmitSettings(NodeGroups.preset(preset), namespace_template=namespace_template, tenancy=tenancy)
    return plan_job(template, settings, context)


def backend(namespace="proj-dev", interruptible=False, service_account=""):
    meta = execution_metadata()
    meta.namespace, meta.interruptible, meta.k8s_service_account = namespace, interruptible, service_account
    return meta


def test_namespace_precedence_task_then_admin_then_backend_then_default():
    explicit = python_template("pass", ArmadaConfig(namespace="mine"), sources={"namespace": "project"})
    result = plan(explicit, backend(), namespace_template="{project}-x", tenancy=Tenancy(allowed_namespaces=("mine",)))
    assert (result.job.namespace, result.namespace_source) == ("mine", "project")
    result = plan(python_template("pass"), backend(), namespace_template="{org}{project}-{domain}")
    assert (result.job.namespace, result.namespace_source) == ("proj-dev", "admin")
    result = plan(python_template("pass"), backend(), namespace_template="flyte-jobs")
    assert result.job.namespace == "flyte-jobs"
    result = plan(python_template("pass"), backend(namespace="ns-from-flyte"))
    assert (result.job.namespace, result.namespace_source) == ("ns-from-flyte", "backend")
    result = plan(python_template("pass"), backend(namespace=""))
    assert (result.job.namespace, result.namespace_source) == ("default", "default")


def test_local_runs_keep_todays_namespace_even_with_an_admin_template():
    result = plan(python_template("pass"), None, namespace_template="{project}-{domain}")
    assert (result.job.namespace, result.namespace_source) == ("default", "default")


def test_a_template_rendering_an_invalid_namespace_is_refused_naming_the_setting():
    meta = backend()
    with pytest.raises(InvalidConfig) as info:
        plan(python_template("pass"), meta, namespace_template="{project}_{domain}")
    assert info.value.field == "namespace_template" and "proj_dev" in str(info.value)


@pytest.mark.parametrize("template", ["{projekt}-{domain}", "{project", "ns-{0}"])
def test_unknown_placeholders_are_refused_when_the_settings_are_read(template):
    with pytest.raises(InvalidConfig, match="namespace_template"):
        resolve_settings(namespace_template=template)


def test_settings_accept_the_documented_placeholders():
    armada_flyte.configure(namespace_template="{org}-{project}-{domain}-{namespace}")
    assert resolve_settings().namespace_template == "{org}-{project}-{domain}-{namespace}"


def test_a_local_run_reads_interruptible_and_service_account_from_the_template():
    template = python_template("pass")
    template.metadata.interruptible = True
    template.security_context.run_as.k8s_service_account = "runner"
    spec = plan(template).job.pod_spec
    assert spec["priorityClassName"] == "armada-preemptible"
    assert spec["serviceAccountName"] == "runner"
    assert plan(python_template("pass")).job.pod_spec["priorityClassName"] == "armada-default"


def test_the_backends_interruptible_flag_wins_over_the_templates():
    # The backend turns interruptible off for the last attempts (interruptible_failure_threshold).
    template = python_template("pass")
    template.metadata.interruptible = True
    assert plan(template, backend(interruptible=False)).job.pod_spec["priorityClassName"] == "armada-default"


def test_interruptible_tasks_get_the_platforms_spot_tolerations():
    spec = plan(python_template("pass"), backend(interruptible=True), preset="aks").job.pod_spec
    assert {
        "key": "kubernetes.azure.com/scalesetpriority",
        "operator": "Equal",
        "value": "spot",
        "effect": "NoSchedule",
    } in spec["tolerations"]
    plain = plan(python_template("pass"), backend(interruptible=False), preset="aks").job.pod_spec
    assert "kubernetes.azure.com/scalesetpriority" not in str(plain.get("tolerations"))


def test_a_pod_templates_priority_class_is_kept():
    template = python_template("pass")
    job = plan(template, backend(interruptible=True)).job
    spec = dict(job.pod_spec, priorityClassName="armada-resilient")
    assert Placement(None, None, priority_class="armada-preemptible").apply_to(spec)["priorityClassName"] == (
        "armada-resilient"
    )


def test_an_invalid_backend_namespace_is_refused():
    with pytest.raises(InvalidConfig, match="task_execution_metadata.namespace"):
        plan(python_template("pass"), backend(namespace="Not_A_Namespace"))


def test_node_group_file_priority_classes_are_validated():
    data = {"architectures": {"amd64": {}}, "interruptible": {"priority_class": "Bad Class"}}
    with pytest.raises(InvalidConfig, match="interruptible.priority_class"):
        NodeGroups.from_mapping(data)
    groups = NodeGroups.from_mapping({"architectures": {"amd64": {}}})
    assert (groups.interruptible.priority_class, groups.non_interruptible.priority_class) == (
        "armada-preemptible",
        "armada-default",
    )
