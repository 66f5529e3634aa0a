"""What the Flyte backend says about one attempt, beyond the template: which run it is, where its
outputs go, its env, namespace, service account, labels, annotations and whether it may be
interrupted. Pure: read from TaskExecutionMetadata (or, in local runs, from the template alone).

Flyte's pod plugin puts these on every stock pod (flytek8s/pod_helper.go: the metadata's labels
and annotations under the pod template's, its service account when the pod sets none, its
interruptible node selector and tolerations). Local runs have no metadata: the template's own
`metadata.interruptible` and `security_context.run_as` are all there is, and the run's identity is
read from the a0 args the local run rendered.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Optional

from armada_flyte.connector.config.namespaces import render_namespace
from armada_flyte.connector.model.identity import RunIdentity
from armada_flyte.errors import InvalidConfig
from armada_flyte.kube import dns_label_problem, dns_subdomain_problem, label_key_problem, label_value
from armada_flyte.spec import DEFAULT_NAMESPACE, SubmissionSpec

log = logging.getLogger(__name__)

RESERVED_PREFIXES = ("armadaproject.io/", "armada-flyte.io/")
"""Label and annotation prefixes the backend's metadata may not set: Armada (gangs) or the connector reads them."""


@dataclass(frozen=True)
class ExecutionContext:
    """One attempt as the backend describes it (all empty in a local run, except what the template says)."""

    identity: RunIdentity = field(default_factory=RunIdentity)
    output_prefix: str = ""
    """Where the backend keeps this attempt's data (create's `output_prefix`)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """The backend's environment variables for the pod."""
    namespace: str = ""
    service_account: str = ""
    """The job's: the backend's (its metadata), else the task's own (`TaskEnvironment(service_account=...)`)."""
    backend_service_account: str = ""
    """The one the backend's metadata gave ("" in local runs): a task's own other one is the admin's to allow."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """The backend's labels Kubernetes accepts (`of` drops reserved and invalid keys), values made safe."""
    annotations: Mapping[str, str] = field(default_factory=dict)
    """The backend's annotations Kubernetes accepts (`of` drops reserved and invalid keys)."""
    interruptible: bool = False
    from_backend: bool = False

    @classmethod
    def of(
        cls, metadata: Any, task_template: Any, output_prefix: str = "", attempt: Optional[int] = None
    ) -> ExecutionContext:
        """The backend's metadata when given (its interruptible flag already has the failure threshold
        applied), else the template's own flag and service account. `attempt`: a local run's attempt."""
        identity = _identity(task_template, metadata)
        if attempt is not None:
            identity = replace(identity, attempt=attempt)
        run_as = ""
        if task_template.HasField("security_context") and task_template.security_context.HasField("run_as"):
            run_as = task_template.security_context.run_as.k8s_service_account
        if metadata is None:
            return cls(
                identity, output_prefix, service_account=run_as, interruptible=task_template.metadata.interruptible
            )
        return cls(
            identity,
            output_prefix,
            env=dict(metadata.environment_variables),
            namespace=metadata.namespace,
            service_account=metadata.k8s_service_account or run_as,
            backend_service_account=metadata.k8s_service_account,
            labels=_safe(metadata.labels, "label", as_label=True),
            annotations=_safe(metadata.annotations, "annotation", as_label=False),
            interruptible=metadata.interruptible,
            from_backend=True,
        )


def job_namespace(
    spec: SubmissionSpec, context: ExecutionContext, namespace_template: Optional[str]
) -> tuple[str, str]:
    """The job's namespace and who chose it, strongest first: ArmadaConfig.namespace (task, env or
    project; in backend runs only where the admin's `allowed_namespaces` allows it, see `submit.tenancy`) >
    the admin's namespace_template (backend runs) > the backend's namespace > `default`."""
    if "namespace" in spec.sources:
        return spec.namespace, spec.sources["namespace"]
    return admin_namespace(context, namespace_template)


def admin_namespace(context: ExecutionContext, namespace_template: Optional[str]) -> tuple[str, str]:
    """The namespace a run gets when its task names none, and who chose it: the admin's namespace_template
    (backend runs) > the backend's namespace > `default`."""
    identity = context.identity
    if context.from_backend and namespace_template:
        rendered = render_namespace(
            namespace_template, identity.project, identity.domain, identity.org, context.namespace
        )
        if problem := dns_label_problem(rendered):
            raise InvalidConfig(
                "namespace_template",
                namespace_template,
                f"for project {identity.project!r}, domain {identity.domain!r} it gives {problem}; change the template",
            )
        return rendered, "admin"
    if context.namespace:
        if problem := dns_label_problem(context.namespace):
            raise InvalidConfig("task_execution_metadata.namespace", context.namespace, problem)
        return context.namespace, "backend"
    return DEFAULT_NAMESPACE, "default"


def service_account(pod_spec: Mapping[str, Any], context: ExecutionContext) -> str:
    """The service account the backend gives a pod whose template names none ("": none to give)."""
    if not context.service_account or pod_spec.get("serviceAccountName"):
        return ""
    if problem := dns_subdomain_problem(context.service_account):
        raise InvalidConfig("service account", context.service_account, problem)
    return context.service_account


def _identity(task_template: Any, metadata: Any) -> RunIdentity:
    """Run identity from Flyte's metadata, or, in local runs, from the rendered a0 args."""
    identity = RunIdentity.from_metadata(metadata, task_template.id.name)
    if identity.run:
        return identity
    args = list(task_template.container.args) if task_template.HasField("container") else []

    def arg(flag: str) -> str:
        return args[args.index(flag) + 1] if flag in args[:-1] else ""

    run, action = arg("--run-name"), arg("--name")
    return replace(identity, run="" if "{{" in run else run, action="" if "{{" in action else action)


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
