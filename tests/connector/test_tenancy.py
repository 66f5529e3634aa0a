"""The admin's tenancy policy, pure: what a backend run's task may choose for itself (namespace, queue, a
pod template's service account and privileged fields), what it is refused with, and that local runs keep
their freedom. Through a real c0: tests/connector/test_c0_tenancy.py."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from armada_flyte import ArmadaConfig
from armada_flyte.connector.config.namespaces import first_match, render_globs
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.config.settings import resolve_settings
from armada_flyte.connector.config.settings_groups import Tenancy
from armada_flyte.connector.model.identity import RunIdentity
from armada_flyte.connector.submit.execution_context import ExecutionContext
from armada_flyte.connector.submit.plan import JobPlan, SubmitSettings, plan_job
from armada_flyte.connector.submit.tenancy import privileged_fields
from armada_flyte.errors import InvalidConfig, TenancyRefused

from support.armada_templates import execution_metadata, python_template, with_pod_spec

pytestmark = pytest.mark.pure

IDENTITY = RunIdentity(org="acme", project="vision", domain="dev", run="r1", action="a0", task="t")


def backend(namespace: str = "vision-dev", service_account: str = "flyte-runner") -> Any:
    meta = execution_metadata()
    meta.namespace, meta.k8s_service_account = namespace, service_account
    return meta


def plan(template: Any, metadata: Any = None, namespace_template: Optional[str] = None, **policy: Any) -> JobPlan:
    context = ExecutionContext.of(metadata, template, "s3://b/raw")
    if metadata is not None:
        context = replace(context, identity=IDENTITY)
    settings = SubmitSettings(NodeGroups.preset("embedded"), namespace_template=namespace_template)
    return plan_job(template, replace(settings, tenancy=Tenancy(**policy)), context)


def task(namespace: Optional[str] = None, queue: Optional[str] = None, source: str = "task") -> Any:
    sources = {"namespace": source} if namespace else {}
    return python_template("pass", ArmadaConfig(namespace=namespace, queue=queue), sources=sources)


def pod_template(**pod: Any) -> Any:
    """A task whose pod template's spec has these fields beside its one container (`primary`)."""
    return with_pod_spec(python_template("pass"), **pod)


# ---- namespaces ----
NAMESPACE_TABLE = [
    # (task's namespace, allowed_namespaces, namespace_template, job namespace or None: refused)
    (None, (), None, "vision-dev"),  # the backend's
    (None, (), "armada-{project}", "armada-vision"),  # the admin's template
    ("team-b", (), None, None),  # another team's: refused by default
    ("vision-dev", (), None, "vision-dev"),  # the one it gets anyway
    ("armada-vision", (), "armada-{project}", "armada-vision"),  # the admin's own, named again
    ("vision-dev", (), "armada-{project}", None),  # the backend's, where the admin maps jobs elsewhere
    ("vision-scratch", ("{project}-*",), None, "vision-scratch"),
    ("vision-scratch", ("{project}-*",), "armada-{project}", "vision-scratch"),
    ("team-b-scratch", ("{project}-*",), None, None),
    ("shared", ("shared", "{project}-*"), None, "shared"),
    ("acme-batch", ("{org}-batch",), None, "acme-batch"),
    ("vision-dev-x", ("{namespace}-x",), None, "vision-dev-x"),
    ("anything", ("*",), None, "anything"),
]


@pytest.mark.parametrize("asked, allowed, namespace_template, expected", NAMESPACE_TABLE)
def test_a_backend_tasks_namespace_is_its_own_unless_the_admin_allows_another(
    asked, allowed, namespace_template, expected
):
    template = task(namespace=asked)
    if expected is None:
        with pytest.raises(TenancyRefused) as info:
            plan(template, backend(), namespace_template, allowed_namespaces=allowed)
        assert info.value.setting == "allowed_namespaces"
        assert "ARMADA_FLYTE_ALLOWED_NAMESPACES" in str(info.value) and repr(asked) in str(info.value)
        return
    assert plan(template, backend(), namespace_template, allowed_namespaces=allowed).job.namespace == expected


@pytest.mark.parametrize("source", ["task", "env", "project"])
def test_the_refusal_names_where_the_namespace_was_set(source):
    with pytest.raises(TenancyRefused, match=f"set by {source}"):
        plan(task(namespace="team-b", source=source), backend())


def test_a_project_value_cannot_widen_the_admins_glob():
    meta = backend()
    context = replace(ExecutionContext.of(meta, task(), "s3://b/raw"), identity=replace(IDENTITY, project="*"))
    settings = replace(
        SubmitSettings(NodeGroups.preset("embedded")), tenancy=Tenancy(allowed_namespaces=("{project}",))
    )
    with pytest.raises(TenancyRefused):
        plan_job(task(namespace="team-b"), settings, context)


def test_local_runs_keep_the_tasks_namespace_and_queue():
    result = plan(task(namespace="team-b", queue="other"), None, "{project}", allowed_queues=("none-*",))
    assert (result.job.namespace, result.queue) == ("team-b", "other")


# ---- queues ----
QUEUE_TABLE = [
    # (task's queue, allowed_queues, allowed?)
    ("flyte", ("*",), True),  # the default: any queue
    ("anything", ("*",), True),
    ("vision", ("{project}",), True),
    ("vision-gpu", ("{project}-*",), True),
    ("team-b", ("{project}", "shared-*"), False),
    ("shared-cpu", ("{project}", "shared-*"), True),
    ("flyte", ("{project}",), False),  # a task naming no queue gets `flyte`, which must be allowed too
    ("flyte", (), False),
]


@pytest.mark.parametrize("queue, allowed, ok", QUEUE_TABLE)
def test_a_backend_tasks_queue_must_be_in_the_admins_allow_list(queue, allowed, ok):
    template = task(queue=queue)
    if ok:
        assert plan(template, backend(), allowed_queues=allowed).queue == queue
        return
    with pytest.raises(TenancyRefused) as info:
        plan(template, backend(), allowed_queues=allowed)
    assert info.value.setting == "allowed_queues" and "ARMADA_FLYTE_ALLOWED_QUEUES" in str(info.value)


# ---- pod templates ----
PRIVILEGED_TABLE = [
    # (pod template fields, what the refusal names)
    ({"serviceAccountName": "team-b-admin"}, "serviceAccountName=team-b-admin"),
    ({"serviceAccount": "team-b-admin"}, "serviceAccount=team-b-admin"),
    ({"hostNetwork": True}, "hostNetwork=true"),
    ({"hostPID": True}, "hostPID=true"),
    ({"hostIPC": True}, "hostIPC=true"),
    ({"primary": {"securityContext": {"privileged": True}}}, "containers[primary].securityContext.privileged=true"),
    (
        {"primary": {"securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}},
        "containers[primary].securityContext.capabilities.add=['NET_ADMIN']",
    ),
    (
        {"initContainers": [{"name": "init", "image": "busybox", "securityContext": {"privileged": True}}]},
        "initContainers[init].securityContext.privileged=true",
    ),
    ({"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}, "volumes[root].hostPath=/"),
    ({"primary": {"ports": [{"containerPort": 80, "hostPort": 80}]}}, "containers[primary].ports.hostPort=80"),
]


@pytest.mark.parametrize("fields, named", PRIVILEGED_TABLE)
def test_a_pod_templates_privileged_fields_are_refused_unless_the_admin_opts_in(fields, named):
    with pytest.raises(TenancyRefused) as info:
        plan(pod_template(**dict(fields)), backend())
    assert info.value.setting == "allow_privileged_pod_templates"
    assert named in str(info.value) and "ARMADA_FLYTE_ALLOW_PRIVILEGED_POD_TEMPLATES" in str(info.value)
    assert plan(pod_template(**dict(fields)), backend(), allow_privileged_pod_templates=True).job


def test_a_pod_template_may_name_the_backends_own_service_account():
    result = plan(pod_template(serviceAccountName="flyte-runner"), backend(service_account="flyte-runner"))
    assert result.job.pod_spec["serviceAccountName"] == "flyte-runner"


def runs_as(account: str) -> Any:
    """A task whose environment names its own service account (`TaskEnvironment(service_account=...)`: the
    template's security context, run_as)."""
    template = python_template("pass")
    template.security_context.run_as.k8s_service_account = account
    return template


def test_a_tasks_own_service_account_is_refused_where_the_backend_gave_none_unless_the_admin_opts_in():
    with pytest.raises(TenancyRefused) as info:
        plan(runs_as("team-b-admin"), backend(service_account=""))
    assert info.value.setting == "allow_privileged_pod_templates" and "team-b-admin" in str(info.value)
    allowed = plan(runs_as("team-b-admin"), backend(service_account=""), allow_privileged_pod_templates=True)
    assert allowed.job.pod_spec["serviceAccountName"] == "team-b-admin"


def test_the_backends_service_account_wins_over_the_tasks_own():
    result = plan(runs_as("team-b-admin"), backend(service_account="flyte-runner"))
    assert result.job.pod_spec["serviceAccountName"] == "flyte-runner"


def test_a_pod_template_naming_the_tasks_own_service_account_is_still_another_one():
    """The template's run_as is the task's choice, not the backend's: it does not make a pod template's equal
    account the backend's."""
    template = with_pod_spec(runs_as("team-b-admin"), serviceAccountName="team-b-admin")
    with pytest.raises(TenancyRefused):
        plan(template, backend(service_account=""))


def test_local_runs_keep_the_tasks_own_service_account():
    assert plan(runs_as("own-sa")).job.pod_spec["serviceAccountName"] == "own-sa"


def test_a_plain_pod_template_and_dropped_capabilities_pass():
    fields = {"primary": {"securityContext": {"privileged": False, "capabilities": {"drop": ["ALL"]}}}}
    assert plan(pod_template(hostNetwork=False, **fields), backend()).job


def test_local_runs_keep_a_pod_templates_service_account_and_host_network():
    result = plan(pod_template(serviceAccountName="own-sa", hostNetwork=True))
    assert result.job.pod_spec["serviceAccountName"] == "own-sa"


def test_every_privileged_field_is_named_at_once():
    spec = {"hostNetwork": True, "hostPID": True, "volumes": [{"name": "v", "hostPath": {"path": "/var"}}]}
    assert list(privileged_fields(spec, "")) == ["hostNetwork=true", "hostPID=true", "volumes[v].hostPath=/var"]


# ---- the settings ----
def test_the_settings_read_comma_separated_globs_and_default_to_no_namespace_and_any_queue():
    settings = resolve_settings()
    assert settings.allowed_namespaces == () and settings.allowed_queues == ("*",)
    assert settings.allow_privileged_pod_templates is False
    settings = resolve_settings(allowed_namespaces="{project}-*, shared", allowed_queues='["{project}"]')
    assert settings.allowed_namespaces == ("{project}-*", "shared") and settings.allowed_queues == ("{project}",)


def test_the_settings_read_the_environment(monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_ALLOWED_NAMESPACES", "{project}-*")
    monkeypatch.setenv("ARMADA_FLYTE_ALLOW_PRIVILEGED_POD_TEMPLATES", "true")
    settings = resolve_settings()
    assert settings.allowed_namespaces == ("{project}-*",) and settings.allow_privileged_pod_templates is True


@pytest.mark.parametrize("setting", ["allowed_namespaces", "allowed_queues"])
def test_unknown_placeholders_in_an_allow_list_are_refused_naming_the_setting(setting):
    with pytest.raises(InvalidConfig, match=setting):
        resolve_settings(**{setting: "{projekt}-*"})


# ---- the rendered globs are kept: a fan-out's creates share one identity ----
_names = st.text(alphabet="ab*?[-", min_size=0, max_size=4)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(_names, _names, _names, _names, _names), min_size=1, max_size=8),
    st.lists(
        st.sampled_from(["{project}-*", "{domain}", "team-{org}?", "*", "{namespace}", "x[{project}]"]), max_size=3
    ),
)
def test_kept_globs_and_matches_answer_as_fresh_ones_for_any_run_order(runs, patterns):
    """Identities in any order (repeats included) get what a cold cache gives each: nothing of one
    run's identity leaks into another's globs or match."""
    globs = tuple(patterns)
    warm = []
    for value, *identity in runs:
        rendered = render_globs(globs, *identity)
        warm.append((rendered, first_match(value, rendered)))
    for (value, *identity), kept in zip(runs, warm):
        render_globs.cache_clear()
        first_match.cache_clear()
        fresh = render_globs(globs, *identity)
        assert kept == (fresh, first_match(value, fresh))
