"""Render the Armada submission a task would make, without submitting: what Airflow's Armada
operator calls a dry run. Useful to see where a task would land on a given platform. It is the
connector's own plan (`submit.plan.plan_job`), so it prints exactly what create submits."""

from __future__ import annotations

import importlib
import pathlib
import re
import sys
from dataclasses import replace
from typing import Any

from flyte.models import CodeBundle, SerializationContext
from google.protobuf import json_format

from armada_flyte.connector.armada.submit_items import submit_request
from armada_flyte.connector.model.identity import RunIdentity
from armada_flyte.connector.submit.execution_context import ExecutionContext
from armada_flyte.connector.submit.plan import SubmitSettings, plan_job
from armada_flyte.errors import InvalidConfig
from armada_flyte.task.flyte_internals import get_proto_task

_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_PLACEHOLDER_BUNDLE = "s3://bucket/code/bundle.tgz"
_PLACEHOLDER_OUTPUTS = "s3://bucket/raw/dry-run/a0/0"


def load_task(reference: str, root_dir: pathlib.Path) -> Any:
    """The task named `module:attribute`, imported with `root_dir` on the path."""
    module_name, _, attribute = reference.partition(":")
    if not _DOTTED.fullmatch(module_name) or not attribute.isidentifier():
        raise InvalidConfig("TASK", reference, "name it as module:task, e.g. examples.multiarch:train")
    sys.path.insert(0, str(root_dir))
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise InvalidConfig(
            "TASK", reference, f"no module {exc.name or module_name!r} under {root_dir}; check the name or --root"
        ) from None
    except Exception as exc:  # the user's module itself failed to import: say where, not a traceback
        raise InvalidConfig(
            "TASK", reference, f"importing {module_name} failed: {type(exc).__name__}: {str(exc)[:500]}"
        ) from None
    finally:
        sys.path.remove(str(root_dir))
    task = getattr(module, attribute, None)
    if task is None or not hasattr(task, "custom_config"):
        raise InvalidConfig("TASK", reference, f"{module_name} has no Flyte task named {attribute}")
    return task


def task_template(task: Any, root_dir: pathlib.Path, project: str = "project", domain: str = "development") -> Any:
    """The TaskTemplate `flyte deploy` would register for `task` in `project` and `domain` (placeholder code
    bundle)."""
    sctx = SerializationContext(
        project=project,
        domain=domain,
        version="dry-run",
        root_dir=root_dir,
        code_bundle=CodeBundle(tgz=_PLACEHOLDER_BUNDLE, computed_version="dry-run", destination="/opt/flyte/"),
    )
    return get_proto_task(task, sctx)


def render_submission(task: Any, settings: SubmitSettings, root_dir: pathlib.Path) -> dict[str, Any]:
    """The JobSubmitRequest (as Armada's JSON) create makes for one run of `task`. For an architecture
    preference, `{"create": <that request>, "later_steps": [...]}`: each later architecture's request,
    submitted only once the step before waited `spill_after_seconds` queued for room."""
    template = task_template(task, root_dir)
    identity = RunIdentity(project="project", domain="development", run="dry-run", action="a0", task=template.id.name)
    context = replace(ExecutionContext.of(None, template, _PLACEHOLDER_OUTPUTS), identity=identity)
    plan = plan_job(template, settings, context)
    create = json_format.MessageToDict(submit_request(plan.queue, plan.job_set_id, [plan.job]))
    if not plan.later_steps:
        return create
    later = [
        {
            "architecture": step.architecture,
            "node_group": step.node_group,
            "spill_after_seconds": plan.spill_after,
            "request": json_format.MessageToDict(submit_request(plan.queue, plan.job_set_id, [step.job])),
        }
        for step in plan.later_steps
    ]
    return {"create": create, "later_steps": later}
