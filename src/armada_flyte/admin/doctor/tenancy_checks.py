"""The admin's tenancy policy, as the doctor reports it: what backend tasks may choose for themselves, the
Pod Security Admission labels that back it on the clusters, an open queue list on a multi-project backend,
and tasks the policy refuses (once the connector enforces it, they fail at create).

Pure over the connector's settings and task templates the command loads: nothing here reaches a server.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Sequence

from armada_flyte.admin.doctor.findings import Finding, passed, problem, warning
from armada_flyte.connector.config.namespaces import NAMESPACE_FIELDS, render_namespace
from armada_flyte.connector.config.settings import ConnectorConfig
from armada_flyte.connector.model.identity import RunIdentity
from armada_flyte.connector.submit.execution_context import ExecutionContext
from armada_flyte.connector.submit.plan import SubmitSettings, plan_job
from armada_flyte.errors import ArmadaFlyteError, TenancyRefused

PSA_LABELS = (
    "pod-security.kubernetes.io/enforce=baseline",
    "pod-security.kubernetes.io/warn=restricted",
    "pod-security.kubernetes.io/audit=restricted",
)
"""What the doctor recommends on each job namespace: `baseline` refuses host namespaces, privileged
containers, hostPath volumes, host ports and added capabilities beyond the default set on the cluster itself,
whoever submits; `restricted` is reported, not enforced (Flyte's images often run as root)."""


def check_tenancy(settings: ConnectorConfig, projects: Sequence[str], domain: str) -> list[Finding]:
    """The policy, the Pod Security labels to set, and a warning for any queue on a multi-project backend."""
    tenancy, template = settings.tenancy, settings.targets.namespace_template
    findings = [passed("tenancy.policy", describe_policy(settings))]
    findings += _wide_globs(tenancy)
    namespaces = _job_namespaces(template, projects, domain)
    label = " ".join(PSA_LABELS)
    where = ", ".join(namespaces) if namespaces else "each namespace backend jobs run in"
    psa = (
        f"the admin's policy is enforced by the connector alone; Pod Security Admission labels on the job "
        f"namespaces ({where}) make the clusters refuse privileged pods whoever submits them"
    )
    fix = f"on every executor cluster: kubectl label namespace NAMESPACE {label}"
    if tenancy.allow_privileged_pod_templates:
        findings.append(
            warning(
                "tenancy.pod-security",
                "allow_privileged_pod_templates is true: a backend task's pod template may use the host's network "
                "and processes, privileged containers and hostPath volumes, and any service account; " + psa,
                fix + " (and keep privileged tasks in namespaces of their own, listed in allowed_namespaces)",
            )
        )
    else:
        findings.append(passed("tenancy.pod-security", f"recommended: {psa}; {fix}"))
    if "*" in tenancy.allowed_queues and _multi_project(settings, projects):
        shown = f"{len(projects)} projects ({', '.join(projects)})" if len(projects) > 1 else "several projects"
        findings.append(
            warning(
                "tenancy.queues",
                f"allowed_queues is '*' on a backend serving {shown}: any task may submit to any queue, so one "
                f"project's tasks can take another's fair share",
                "set ARMADA_FLYTE_ALLOWED_QUEUES to each project's queues, e.g. '{project}' or '{project},shared'",
            )
        )
    return findings


def _wide_globs(tenancy: Any) -> list[Finding]:
    """A warning for each allow-list glob with a wildcard after a placeholder: Flyte's project names may hold
    '-', so `{project}-*` for project `ml` also matches project `ml-platform`'s namespaces and queues."""
    found = []
    for setting, globs in (
        ("allowed_namespaces", tenancy.allowed_namespaces),
        ("allowed_queues", tenancy.allowed_queues),
    ):
        for glob in globs:
            after = glob[glob.find("{") :] if "{" in glob else ""
            if any(mark in after for mark in "*?["):
                found.append(
                    warning(
                        "tenancy.globs",
                        f"{setting} {glob!r}: a wildcard after a placeholder also matches other projects whose names "
                        f"begin with this one's (for project 'ml', '{{project}}-*' matches 'ml-platform-dev')",
                        f"name each one after the placeholder (e.g. {glob.split('{')[0]}{{project}}-scratch), or list "
                        "them",
                    )
                )
    return found


def describe_policy(settings: ConnectorConfig) -> str:
    """The policy in a sentence: where backend jobs go, and what a task may choose beyond that."""
    tenancy, template = settings.tenancy, settings.targets.namespace_template
    where = f"namespace_template {template!r}" if template else "the backend's namespace (no namespace_template)"
    names = ", ".join(repr(glob) for glob in tenancy.allowed_namespaces) or "none"
    queues = ", ".join(repr(glob) for glob in tenancy.allowed_queues) or "none"
    privileged = "allowed" if tenancy.allow_privileged_pod_templates else "refused"
    return (
        f"backend runs: jobs go to {where}; a task's own namespace is allowed only if it matches "
        f"allowed_namespaces: {names}; queues allowed: {queues}; a pod template's own service account and "
        f"privileged fields: {privileged} (allow_privileged_pod_templates). Local runs are not held to it."
    )


def check_tasks(
    tasks: Iterable[tuple[str, Any]], settings: SubmitSettings, projects: Sequence[str], domain: str
) -> list[Finding]:
    """Each task (its name, and its template per project) planned as a backend run of each project: a
    warning for every one the policy refuses, naming the setting."""
    findings = []
    for name, template_for in tasks:
        refused: list[tuple[str, TenancyRefused]] = []
        failing: list[tuple[str, ArmadaFlyteError]] = []
        for project in projects:
            template = template_for(project)
            context = replace(
                ExecutionContext.of(None, template, "s3://bucket/raw/doctor/a0/0"),
                identity=RunIdentity(project=project, domain=domain, run="doctor", action="a0", task=name),
                namespace=render_namespace("{project}-{domain}", project, domain, "", ""),
                from_backend=True,
            )
            try:
                plan_job(template, settings, context)
            except TenancyRefused as exc:
                refused.append((project, exc))
            except ArmadaFlyteError as exc:  # refused for another reason (its resources, its placement, ...)
                failing.append((project, exc))
        if failing:
            said = " ".join(f"In project {project}: {exc}" for project, exc in failing)
            findings.append(
                problem("tenancy.tasks", f"task {name} can't be planned as a job. {said}", "change the task as said")
            )
        elif refused:
            said = " ".join(f"In project {project}: {exc}" for project, exc in refused)
            settings_named = sorted({f"ARMADA_FLYTE_{exc.setting.upper()}" for _, exc in refused})
            findings.append(
                warning(
                    "tenancy.tasks",
                    f"task {name}, run from the Flyte backend, would be refused by the admin's policy. {said}",
                    f"change the task as said, or have the admin widen {' and '.join(settings_named)}",
                )
            )
        else:
            findings.append(passed("tenancy.tasks", f"task {name}: within the admin's policy in {', '.join(projects)}"))
    return findings


def _job_namespaces(template: Any, projects: Sequence[str], domain: str) -> list[str]:
    if not template or not projects:
        return []
    return sorted({render_namespace(template, p, domain, "", f"{p}-{domain}") for p in projects})


def _multi_project(settings: ConnectorConfig, projects: Sequence[str]) -> bool:
    """Whether the backend serves several projects: as `--projects` says, or as the admin's own templates do."""
    if len(projects) > 1:
        return True
    texts = [settings.targets.namespace_template or "", *settings.tenancy.allowed_namespaces]
    return any(f"{{{field}}}" in text for text in texts for field in NAMESPACE_FIELDS if field != "org")
