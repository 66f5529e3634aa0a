"""What the Flyte backend says about one attempt, beyond the template: namespace, service account,
labels, annotations and whether it may be interrupted. Pure: read from TaskExecutionMetadata.

Flyte's pod plugin puts these on every stock pod (flytek8s/pod_helper.go: the metadata's labels
and annotations under the pod template's, its service account when the pod sets none, its
interruptible node selector and tolerations). Local runs have no metadata: the template's own
`metadata.interruptible` and `security_context.run_as` are all there is.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Optional

from armada_flyte.connector.namespaces import render_namespace
from armada_flyte.connector.pod import JobRequest, RunIdentity
from armada_flyte.errors import InvalidConfig
from armada_flyte.kube import dns_label_problem, dns_subdomain_problem, label_key_problem, label_value
from armada_flyte.spec import DEFAULT_NAMESPACE, SubmissionSpec

log = logging.getLogger(__name__)

RESERVED_PREFIXES = ("armadaproject.io/", "armada-flyte.io/")
"""Label and annotation prefixes the backend's metadata may not set: Armada (gangs) or the connector reads them."""


@dataclass(frozen=True)
class ExecutionContext:
    """The backend's view of one attempt (all empty in a local run, except what the template says)."""

    namespace: str = ""
    service_account: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    interruptible: bool = False
    from_backend: bool = False

    @classmethod
    def of(cls, metadata: Any, task_template: Any) -> ExecutionContext:
        """The backend's metadata when given (its interruptible flag already has the failure threshold
        applied), else the template's own flag and service account."""
        run_as = ""
        if task_template.HasField("security_context") and task_template.security_context.HasField("run_as"):
            run_as = task_template.security_context.run_as.k8s_service_account
        if metadata is None:
            return cls(service_account=run_as, interruptible=task_template.metadata.interruptible)
        return cls(
            namespace=metadata.namespace,
            service_account=metadata.k8s_service_account or run_as,
            labels=dict(metadata.labels),
            annotations=dict(metadata.annotations),
            interruptible=metadata.interruptible,
            from_backend=True,
        )


def job_namespace(
    spec: SubmissionSpec, context: ExecutionContext, identity: RunIdentity, namespace_template: Optional[str]
) -> tuple[str, str]:
    """The job's namespace and who chose it, strongest first: ArmadaConfig.namespace (task, env or
    project) > the admin's namespace_template (backend runs) > the backend's namespace > `default`."""
    if "namespace" in spec.sources:
        return spec.namespace, spec.sources["namespace"]
    if context.from_backend and namespace_template:
        rendered = render_namespace(
            namespace_template, identity.project, identity.domain, identity.org, context.namespace
        )
        if problem := dns_label_problem(rendered):
            raise InvalidConfig(
                "namespace_template",
                namespace_template,
                f"for project {identity.project!r}, domain {identity.domain!r} it gives {problem}; change the "
                f"template, or set ArmadaConfig(namespace=...) on the task",
            )
        return rendered, "admin"
    if context.namespace:
        if problem := dns_label_problem(context.namespace):
            raise InvalidConfig("task_execution_metadata.namespace", context.namespace, problem)
        return context.namespace, "backend"
    return DEFAULT_NAMESPACE, "default"


def with_context(job: JobRequest, context: ExecutionContext, namespace: str) -> JobRequest:
    """The job in `namespace`, with the backend's labels and annotations under the template's and the
    connector's own, and the service account unless the pod template names one."""
    labels = {**_safe(context.labels, "label", as_label=True), **job.labels}
    annotations = {**_safe(context.annotations, "annotation", as_label=False), **job.annotations}
    pod_spec = job.pod_spec
    if context.service_account and not pod_spec.get("serviceAccountName"):
        if problem := dns_subdomain_problem(context.service_account):
            raise InvalidConfig("service account", context.service_account, problem)
        pod_spec = {**pod_spec, "serviceAccountName": context.service_account}
    return replace(job, namespace=namespace, labels=labels, annotations=annotations, pod_spec=pod_spec)


def _safe(values: Mapping[str, str], what: str, as_label: bool) -> dict[str, str]:
    """Entries Kubernetes accepts: valid keys, label values made safe; reserved or invalid keys are dropped (logged)."""
    out = {}
    for key, value in values.items():
        if key.startswith(RESERVED_PREFIXES):
            log.warning("dropping the backend's %s %s: the %s prefix is reserved", what, key, key.split("/")[0])
            continue
        if problem := label_key_problem(key):
            log.warning("dropping the backend's %s %r: %s", what, key, problem)
            continue
        out[key] = label_value(value) if as_label else value
    return out
