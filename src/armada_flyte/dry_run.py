"""Render the Armada submission a task would make, without submitting: what Airflow's Armada
operator calls a dry run. Useful to see where a task would land on a given platform."""

from __future__ import annotations

import importlib
import pathlib
import sys
from typing import Any

from google.protobuf import json_format

from armada_flyte.errors import InvalidConfig
from armada_flyte.nodegroups import NodeGroups

_PLACEHOLDER_BUNDLE = "s3://bucket/code/bundle.tgz"
_PLACEHOLDER_OUTPUTS = "s3://bucket/raw/dry-run/a0/0"


def load_task(reference: str, root_dir: pathlib.Path) -> Any:
    """The task named `module:attribute`, imported with `root_dir` on the path."""
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise InvalidConfig("TASK", reference, "name it as module:task, e.g. examples.multiarch:train")
    sys.path.insert(0, str(root_dir))
    try:
        module = importlib.import_module(module_name)
    finally:
        sys.path.remove(str(root_dir))
    task = getattr(module, attribute, None)
    if task is None or not hasattr(task, "custom_config"):
        raise InvalidConfig("TASK", reference, f"{module_name} has no Flyte task named {attribute}")
    return task


def render_submission(task: Any, node_groups: NodeGroups, root_dir: pathlib.Path) -> dict[str, Any]:
    """The JobSubmitRequest (as Armada's JSON) for one run of `task`, placed with `node_groups`."""
    from flyte._internal.runtime.task_serde import get_proto_task
    from flyte.models import CodeBundle, SerializationContext

    from armada_flyte.armada_api import submit_request
    from armada_flyte.placement import placement_for, resolve_architecture
    from armada_flyte.podspec import BlobSettings, RunIdentity, TemplatePod, build_job_request
    from armada_flyte.submission import SubmissionSpec

    sctx = SerializationContext(
        project="project",
        domain="development",
        version="dry-run",
        root_dir=root_dir,
        code_bundle=CodeBundle(tgz=_PLACEHOLDER_BUNDLE, computed_version="dry-run", destination="/opt/flyte/"),
    )
    template = get_proto_task(task, sctx)
    spec = SubmissionSpec.from_custom(json_format.MessageToDict(template.custom))
    pod = TemplatePod.of(template)
    resolved = resolve_architecture(spec.architecture, spec.source_of("architecture"), node_groups, pod.pod_spec)
    placement = placement_for(resolved, node_groups, pod.pod_spec)
    identity = RunIdentity(project="project", domain="development", run="dry-run", action="a0", task=template.id.name)
    job = build_job_request(pod, spec, resolved, placement, identity, _PLACEHOLDER_OUTPUTS, BlobSettings())
    request = submit_request(spec.queue, spec.job_set_id or "flyte-dry-run", [job])
    return json_format.MessageToDict(request)
