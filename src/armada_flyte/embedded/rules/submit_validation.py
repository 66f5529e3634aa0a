"""Armada's submit-time rules. The first broken rule refuses the whole request, as Armada does.

Everything here is checked before a job exists, so the scheduler can trust what it reads.
Messages say what is wrong and, where it isn't obvious, what Armada wants instead.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from armada_flyte.embedded.model.job_request import gang_info, main_pod_spec
from armada_flyte.embedded.model.refusals import InvalidArgument
from armada_flyte.embedded.model.requirements import NODE_NAME_FIELD, required_node_selector, toleration
from armada_flyte.embedded.rules.defaults import PRIORITY_CLASSES
from armada_flyte.kube import format_milli, milli
from armada_flyte.kube_objects import MatchExpression

MAX_JOB_SET_ID_CHARS = 1024
MAX_CLIENT_ID_CHARS = 100
MAX_POD_SPEC_BYTES = 65535
MIN_MEMORY = milli("1Mi")
GRACE_PERIOD_SECONDS = (1, 300)
"""Armada's stock submission.allowedPriorityClassNames (config/server/config.yaml)."""


def validate_request(request: Any) -> None:
    """Raise `InvalidArgument` naming the first broken rule of the request or of one of its items."""
    problem = _request_problem(request)
    if problem:
        raise InvalidArgument(problem)
    for index, item in enumerate(request.job_request_items):
        problem = _item_problem(item)
        if problem:
            raise InvalidArgument(f"job request item {index}: {problem}")


def _request_problem(request: Any) -> str | None:
    if not request.job_set_id:
        return "job set id is a required field"
    if len(request.job_set_id) >= MAX_JOB_SET_ID_CHARS:
        return f"job set id of length {len(request.job_set_id)} must be shorter than {MAX_JOB_SET_ID_CHARS} characters"
    return _gang_problem(request.job_request_items)


def _gang_problem(items: Any) -> str | None:
    seen: dict[str, tuple[int, str, str]] = {}
    for item in items:
        try:
            gang = gang_info(item.annotations)
        except ValueError as exc:
            return f"invalid gang information: {exc}"
        if gang is None:
            continue
        pods = list(item.pod_specs) or ([item.pod_spec] if item.HasField("pod_spec") else [])
        priority_class = pods[0].priorityClassName if pods else ""
        shape = (gang.cardinality, priority_class, gang.uniformity_label)
        expected = seen.setdefault(gang.id, shape)
        for what, want, got in zip(("cardinality", "priority class", "node uniformity label"), expected, shape):
            if want != got:
                return f"inconsistent {what} in gang {gang.id}: expected {want!r} but got {got!r}"
    return None


def _item_problem(item: Any) -> str | None:
    if not item.namespace:
        return "namespace is a required field"
    if not item.HasField("pod_spec") and not item.pod_specs:
        return "the job must contain a pod spec"
    if item.HasField("pod_spec") and item.pod_specs:
        return "set pod_spec or pod_specs, not both"
    if len(item.pod_specs) > 1:
        return "jobs with more than one pod are not supported"
    if len(item.client_id) > MAX_CLIENT_ID_CHARS:
        return f"client id of length {len(item.client_id)} is longer than the maximum of {MAX_CLIENT_ID_CHARS}"
    pod = main_pod_spec(item)
    size = pod.ByteSize()
    if size > MAX_POD_SPEC_BYTES:
        return f"pod spec has {size} bytes, more than the maximum of {MAX_POD_SPEC_BYTES}"
    if not pod.containers:
        return "the pod spec has no containers"
    return (
        _affinity_problem(pod)
        or _resources_problem(pod)
        or _priority_class_problem(pod)
        or _grace_period_problem(pod)
        or _tolerations_problem(pod)
    )


def _priority_class_problem(pod: Any) -> str | None:
    """Only the priority classes Armada's config allows (`validatePriorityClasses`, validation/submit_request.go)."""
    name = pod.priorityClassName
    if name and name not in PRIORITY_CLASSES:
        return f"priority class {name} is not supported"
    return None


def _affinity_problem(pod: Any) -> str | None:
    if pod.HasField("affinity") and pod.affinity.HasField("nodeAffinity"):
        if pod.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution:
            return "preferredDuringSchedulingIgnoredDuringExecution node affinity is not supported by Armada"
    selector = required_node_selector(pod)
    if selector is None:
        return None
    prefix = "invalid requiredDuringSchedulingIgnoredDuringExecution node affinity"
    if not selector.nodeSelectorTerms:
        return f"{prefix}: it needs at least one node selector term"
    for term in selector.nodeSelectorTerms:
        for expression in term.matchExpressions:
            try:
                MatchExpression(key=expression.key, operator=expression.operator, values=list(expression.values))
            except ValidationError as exc:
                return f"{prefix}: {expression.key} {expression.operator}: {_first_message(exc)}"
        for expression in term.matchFields:
            if (
                expression.key != NODE_NAME_FIELD
                or expression.operator not in ("In", "NotIn")
                or len(expression.values) != 1
            ):
                return f"{prefix}: matchFields supports only {NODE_NAME_FIELD} with In or NotIn and one value"
    return None


def _resources_problem(pod: Any) -> str | None:
    for container in list(pod.containers) + list(pod.initContainers):
        name = container.name
        requests = {k: v.string for k, v in container.resources.requests.items()}
        limits = {k: v.string for k, v in container.resources.limits.items()}
        if not requests and not limits:
            return f"container {name} has no resources specified"
        if set(requests) != set(limits):
            return f"container {name} defines different resources for requests and limits"
        for kind, quantities in (("request", requests), ("limit", limits)):
            for resource, quantity in quantities.items():
                try:
                    amount = milli(quantity)
                except ValueError:
                    return f"container {name} {resource} {kind} {quantity!r} is not a Kubernetes quantity"
                if amount < 0:
                    return f"container {name} defines negative resource {kind} ({quantity}) for resource {resource}"
        for resource, quantity in requests.items():
            if milli(limits[resource]) != milli(quantity):
                return (
                    f"container {name} defines {resource} with limits ({limits[resource]}) different from requests "
                    f"({quantity}); Armada needs them equal"
                )
        if "memory" in requests and milli(requests["memory"]) < MIN_MEMORY:
            minimum = format_milli("memory", MIN_MEMORY)
            return f"container {name} memory request ({requests['memory']}) is below the server minimum ({minimum})"
    return None


def _grace_period_problem(pod: Any) -> str | None:
    if not pod.HasField("terminationGracePeriodSeconds") or pod.terminationGracePeriodSeconds == 0:
        return None  # 0 means "use the default", as Armada treats it.
    seconds = pod.terminationGracePeriodSeconds
    low, high = GRACE_PERIOD_SECONDS
    if not low <= seconds <= high:
        return f"terminationGracePeriodSeconds of {seconds} must be [{low}, {high}], or omitted"
    return None


def _tolerations_problem(pod: Any) -> str | None:
    for index, proto in enumerate(pod.tolerations):
        try:
            toleration(proto)
        except ValidationError as exc:
            return f"toleration {index} is invalid: {_first_message(exc)}"
    return None


def _first_message(exc: ValidationError) -> str:
    return exc.errors()[0]["msg"].removeprefix("Value error, ")
