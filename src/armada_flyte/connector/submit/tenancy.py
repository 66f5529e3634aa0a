"""The admin's tenancy policy over one run from a Flyte backend: which namespace, queue, service account
and privileged pod fields a task may choose for itself. Pure.

A task author writes the task; the platform admin runs the connector, whose one Armada identity submits
every team's jobs. So in backend runs the namespace is the admin's (`namespace_template`, else the
backend's), and what a task asks beyond it is refused unless an admin setting allows it: another
namespace (`allowed_namespaces`, default none), a queue (`allowed_queues`, default `*`), a pod template's
own service account or privileged fields (`allow_privileged_pod_templates`, default off). Flyte's own
Kubernetes plugins never let a task pick its namespace. Local runs keep their freedom: the machine and
the Armada are the runner's own.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Optional

from armada_flyte.connector.config.namespaces import first_match, render_globs
from armada_flyte.connector.config.settings_groups import Tenancy
from armada_flyte.connector.submit.decisions import TaskDecisions
from armada_flyte.connector.submit.execution_context import ExecutionContext, admin_namespace
from armada_flyte.errors import TenancyRefused

ALLOWED_NAMESPACES_ENV = "ARMADA_FLYTE_ALLOWED_NAMESPACES"
ALLOWED_QUEUES_ENV = "ARMADA_FLYTE_ALLOWED_QUEUES"
ALLOW_PRIVILEGED_ENV = "ARMADA_FLYTE_ALLOW_PRIVILEGED_POD_TEMPLATES"

_CHOSEN_BY = {"admin": "the admin's namespace_template", "backend": "the backend's", "default": "the default"}
_SET_IN = {
    "task": "the task's ArmadaConfig",
    "env": "the TaskEnvironment's ArmadaConfig",
    "project": "the project's defaults (ARMADA_FLYTE_NAMESPACE at deploy, or [tool.armada-flyte] in pyproject.toml)",
}
_HOST_NAMESPACES = ("hostNetwork", "hostPID", "hostIPC")
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def tenancy_refusal(
    task: TaskDecisions,
    namespace: str,
    context: ExecutionContext,
    policy: Tenancy,
    namespace_template: Optional[str],
) -> Optional[TenancyRefused]:
    """Why the admin's policy refuses this backend run (the first reason: namespace, queue, pod template),
    None when it doesn't, and always None for a local run. `namespace`: the one the plan chose."""
    if not context.from_backend:
        return None
    return (
        _namespace_refusal(namespace, task.spec.source_of("namespace"), namespace_template, context, policy)
        or _queue_refusal(task, context, policy)
        or _service_account_refusal(context, policy)
        or _pod_template_refusal(task, context, policy)
    )


def _service_account_refusal(context: ExecutionContext, policy: Tenancy) -> Optional[TenancyRefused]:
    """A task's own service account (its security context's run_as, set by `TaskEnvironment(service_account=
    ...)`) where the backend gave none: the same opt-in as a pod template's."""
    if context.service_account == context.backend_service_account or policy.allow_privileged_pod_templates:
        return None
    return TenancyRefused(
        "allow_privileged_pod_templates",
        ALLOW_PRIVILEGED_ENV,
        "service_account (the task's security context, run_as)",
        context.service_account,
        "only the service account the backend gives (here none: the namespace's default) while it is false",
        f"Remove service_account= from the task's environment, have the backend assign it, or ask your platform "
        f"admin to set {ALLOW_PRIVILEGED_ENV}=true.",
    )


def _namespace_refusal(
    namespace: str, source: str, namespace_template: Optional[str], context: ExecutionContext, policy: Tenancy
) -> Optional[TenancyRefused]:
    globs = _globs(policy.allowed_namespaces, context, lower=True)
    if first_match(namespace, globs):
        return None
    own, chosen_by = admin_namespace(context, namespace_template)
    if namespace == own:  # what the admin's rule gives anyway
        return None
    allowed = _listed(policy.allowed_namespaces, globs, "no other namespace (unset)")
    return TenancyRefused(
        "allowed_namespaces",
        ALLOWED_NAMESPACES_ENV,
        f"ArmadaConfig.namespace (set by {source})",
        namespace,
        f"{allowed} beside the run's own namespace {own!r} ({_CHOSEN_BY.get(chosen_by, chosen_by)})",
        f"Remove namespace= from {_SET_IN.get(source, source)} to run in {own!r}, or ask your platform admin to "
        f"add {namespace!r} (or a glob matching it) to {ALLOWED_NAMESPACES_ENV}.",
    )


def _queue_refusal(task: TaskDecisions, context: ExecutionContext, policy: Tenancy) -> Optional[TenancyRefused]:
    queue = task.spec.queue
    globs = _globs(policy.allowed_queues, context, lower=False)
    if first_match(queue, globs):
        return None
    return TenancyRefused(
        "allowed_queues",
        ALLOWED_QUEUES_ENV,
        f"ArmadaConfig.queue (set by {task.spec.source_of('queue')})",
        queue,
        _listed(policy.allowed_queues, globs, "no queue (empty)"),
        f"Set ArmadaConfig(queue=...) to a queue those allow, or ask your platform admin to add {queue!r} "
        f"to {ALLOWED_QUEUES_ENV}.",
    )


def _pod_template_refusal(task: TaskDecisions, context: ExecutionContext, policy: Tenancy) -> Optional[TenancyRefused]:
    if not task.pod.from_pod_template or policy.allow_privileged_pod_templates:
        return None
    found = list(privileged_fields(task.pod.pod_spec, context.backend_service_account))
    if not found:
        return None
    backend_account = repr(context.backend_service_account) if context.backend_service_account else "none"
    return TenancyRefused(
        "allow_privileged_pod_templates",
        ALLOW_PRIVILEGED_ENV,
        "pod_template",
        found,
        f"no service account but the backend's ({backend_account}), and none of hostNetwork, hostPID, hostIPC, "
        f"privileged containers, added capabilities, host ports or hostPath volumes (it is false)",
        f"Remove those from the task's pod template, or ask your platform admin to set {ALLOW_PRIVILEGED_ENV}=true.",
    )


def privileged_fields(pod_spec: Mapping[str, Any], backend_account: str) -> Iterator[str]:
    """The fields of a pod template's spec (Kubernetes' JSON names) the admin must opt in to, each as
    `path=value`: a service account other than the backend's, host namespaces, privileged containers,
    added capabilities, host ports, hostPath volumes."""
    for key in ("serviceAccountName", "serviceAccount"):  # the second: the deprecated alias Kubernetes still reads
        account = pod_spec.get(key)
        if account and account != backend_account:
            yield f"{key}={account}"
    for key in _HOST_NAMESPACES:
        if pod_spec.get(key):
            yield f"{key}=true"
    for kind in _CONTAINER_LISTS:
        for container in pod_spec.get(kind) or []:
            name = container.get("name", "?")
            security = container.get("securityContext") or {}
            if security.get("privileged"):
                yield f"{kind}[{name}].securityContext.privileged=true"
            added = (security.get("capabilities") or {}).get("add") or []
            if added:
                yield f"{kind}[{name}].securityContext.capabilities.add={list(added)}"
            for port in container.get("ports") or []:  # a port of the node itself (Pod Security's baseline refuses it)
                if port.get("hostPort"):
                    yield f"{kind}[{name}].ports.hostPort={port['hostPort']}"
    for volume in pod_spec.get("volumes") or []:
        if "hostPath" in volume:
            yield f"volumes[{volume.get('name', '?')}].hostPath={(volume['hostPath'] or {}).get('path', '')}"


def _globs(patterns: tuple[str, ...], context: ExecutionContext, lower: bool) -> tuple[str, ...]:
    identity = context.identity
    values = (identity.project, identity.domain, identity.org, context.namespace)
    return render_globs(patterns, *(v.lower() if lower else v for v in values))


def _listed(patterns: tuple[str, ...], rendered: tuple[str, ...], empty: str) -> str:
    if not patterns:
        return empty
    if patterns == rendered:
        return ", ".join(repr(p) for p in patterns)
    return ", ".join(repr(p) for p in patterns) + f" (for this run: {', '.join(repr(r) for r in rendered)})"
