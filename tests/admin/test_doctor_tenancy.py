"""`armada-flyte doctor` on the admin's tenancy policy: it reports the policy, recommends Pod Security
Admission labels, warns about any queue on a multi-project backend and about tasks the policy refuses."""

from __future__ import annotations

import textwrap

import pytest

pytestmark = pytest.mark.pure

TASKS = textwrap.dedent(
    """
    import flyte

    from armada_flyte import ArmadaConfig

    RESOURCES = flyte.Resources(cpu=1, memory="1Gi")
    elsewhere_env = flyte.TaskEnvironment(
        "elsewhere", image="python:3.11-slim", resources=RESOURCES, plugin_config=ArmadaConfig(namespace="team-b")
    )
    home_env = flyte.TaskEnvironment(
        "home", image="python:3.11-slim", resources=RESOURCES, plugin_config=ArmadaConfig()
    )


    @elsewhere_env.task
    def elsewhere() -> int:
        return 1


    @home_env.task
    def home() -> int:
        return 2


    @flyte.TaskEnvironment("unplaced", image="python:3.11-slim", plugin_config=ArmadaConfig()).task
    def no_resources() -> int:
        return 3
    """
)


def findings_of(report, check):
    return [f for f in report["findings"] if f["check"] == check]


def test_the_policy_is_reported_with_its_defaults(doctor_json):
    code, report = doctor_json("--preset", "embedded")
    assert code == 0
    [policy] = findings_of(report, "tenancy.policy")
    assert (
        policy["ok"] and "allowed_namespaces: none" in policy["message"] and "queues allowed: '*'" in policy["message"]
    )
    assert "privileged fields: refused" in policy["message"]


def test_pod_security_labels_are_recommended_on_the_job_namespaces(doctor_json, monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_NAMESPACE_TEMPLATE", "{project}-{domain}")
    _, report = doctor_json("--preset", "embedded", "--projects", "vision,nlp")
    [psa] = findings_of(report, "tenancy.pod-security")
    assert psa["ok"] and not psa["warning"]
    assert "nlp-development, vision-development" in psa["message"]
    assert "pod-security.kubernetes.io/enforce=baseline" in psa["message"]


def test_privileged_pod_templates_allowed_is_a_warning(doctor_json, monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_ALLOW_PRIVILEGED_POD_TEMPLATES", "true")
    code, report = doctor_json("--preset", "embedded")
    [psa] = findings_of(report, "tenancy.pod-security")
    assert code == 0 and psa["warning"] and "kubectl label namespace" in psa["fix"]


def test_any_queue_on_a_multi_project_backend_is_a_warning(doctor, doctor_json, monkeypatch):
    code, report = doctor_json("--preset", "embedded", "--projects", "vision,nlp")
    [queues] = findings_of(report, "tenancy.queues")
    assert code == 0 and queues["warning"] and "ARMADA_FLYTE_ALLOWED_QUEUES" in queues["fix"]
    _, out = doctor("--preset", "embedded", "--projects", "vision,nlp")
    assert "warn     tenancy.queues" in out and "(1 with a warning)" in out
    monkeypatch.setenv("ARMADA_FLYTE_ALLOWED_QUEUES", "{project}")
    _, report = doctor_json("--preset", "embedded", "--projects", "vision,nlp")
    assert not findings_of(report, "tenancy.queues")


def test_one_project_and_a_fixed_namespace_gives_no_queue_warning(doctor_json):
    _, report = doctor_json("--preset", "embedded", "--projects", "vision")
    assert not findings_of(report, "tenancy.queues")


def test_a_template_over_projects_counts_as_multi_project(doctor_json, monkeypatch):
    monkeypatch.setenv("ARMADA_FLYTE_NAMESPACE_TEMPLATE", "{project}-{domain}")
    _, report = doctor_json("--preset", "embedded")
    assert findings_of(report, "tenancy.queues")


def test_a_task_setting_a_namespace_the_policy_refuses_is_a_warning(doctor_json, tmp_path, monkeypatch):
    (tmp_path / "tenancy_tasks.py").write_text(TASKS)
    args = ("--preset", "embedded", "--root", str(tmp_path), "--projects", "vision")
    code, report = doctor_json(*args, "--task", "tenancy_tasks:elsewhere", "--task", "tenancy_tasks:home")
    assert code == 0
    refused, fine = findings_of(report, "tenancy.tasks")
    assert refused["warning"] and "tenancy_tasks:elsewhere" in refused["message"]
    assert "'team-b'" in refused["message"] and "ARMADA_FLYTE_ALLOWED_NAMESPACES" in refused["fix"]
    assert fine["ok"] and not fine["warning"] and "tenancy_tasks:home" in fine["message"]
    monkeypatch.setenv("ARMADA_FLYTE_ALLOWED_NAMESPACES", "team-*")
    _, report = doctor_json(*args, "--task", "tenancy_tasks:elsewhere")
    assert not findings_of(report, "tenancy.tasks")[0]["warning"]


def test_a_task_the_plan_refuses_for_another_reason_is_a_problem_not_a_crash(doctor_json, tmp_path):
    """Say what is wrong with it, beside the other findings (a task without resources: InvalidConfig). A module
    of its own: the other tests imported tenancy_tasks from another folder."""
    (tmp_path / "tenancy_tasks_unplaced.py").write_text(TASKS)
    args = ("--preset", "embedded", "--root", str(tmp_path), "--projects", "vision")
    code, report = doctor_json(
        *args, "--task", "tenancy_tasks_unplaced:no_resources", "--task", "tenancy_tasks_unplaced:home"
    )
    assert code != 0
    broken, fine = findings_of(report, "tenancy.tasks")
    assert not broken["ok"] and "tenancy_tasks_unplaced:no_resources" in broken["message"], broken
    assert fine["ok"] and "tenancy_tasks_unplaced:home" in fine["message"]


def test_a_wildcard_after_a_placeholder_is_a_warning(doctor_json, monkeypatch):
    """Project names may hold '-': `{project}-*` for project ml also matches project ml-platform's namespaces."""
    monkeypatch.setenv("ARMADA_FLYTE_ALLOWED_NAMESPACES", "{project}-*,{project}-scratch,shared-*")
    _, report = doctor_json("--preset", "embedded")
    (wide,) = findings_of(report, "tenancy.globs")
    assert wide["warning"] and "'{project}-*'" in wide["message"] and "ml-platform" in wide["message"]
