"""Render the Armada submission a task would make, without submitting: what Airflow's Armada
operator calls a dry run. Useful to see where a task would land on a given platform."""

from __future__ import annotations

import importlib
import pathlib
import re
import sys
from typing import Any

from flyte.models import CodeBundle, SerializationContext
from google.protobuf import json_format

from armada_flyte.connector.armada_api import submit_request
from armada_flyte.connector.blob import BlobSettings
from armada_flyte.connector.node_groups import NodeGroups
from armada_flyte.connector.plan import plan_job
from armada_flyte.connector.pod import RunIdentity
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


def render_submission(task: Any, node_groups: NodeGroups, root_dir: pathlib.Path) -> dict[str, Any]:
    """The JobSubmitRequest (as Armada's JSON) for one run of `task`, placed with `node_groups`; for a task with
    an architecture preference, `spillSteps` adds the job of each later architecture, in order, as the
    connector submits it when the one before waited `spill_after` seconds for room (to the same job set)."""
    sctx = SerializationContext(
        project="project",
        domain="development",
        version="dry-run",
        root_dir=root_dir,
        code_bundle=CodeBundle(tgz=_PLACEHOLDER_BUNDLE, computed_version="dry-run", destination="/opt/flyte/"),
    )
    template = get_proto_task(task, sctx)
    identity = RunIdentity(project="project", domain="development", run="dry-run", action="a0", task=template.id.name)
    plan = plan_job(template, node_groups, identity, _PLACEHOLDER_OUTPUTS, BlobSettings())
    job_set = plan.job_set_id
    rendered = json_format.MessageToDict(submit_request(plan.spec.queue, job_set, [plan.job]))
    if plan.spill_jobs:
        rendered["spillSteps"] = [
            {
                "architecture": step.architecture.value,
                "nodeGroup": step.node_group,
                "afterQueuedSeconds": plan.spill_after * (index + 1),
                "jobRequestItems": json_format.MessageToDict(submit_request(plan.spec.queue, job_set, [step.job]))[
                    "jobRequestItems"
                ],
            }
            for index, step in enumerate(plan.spill_jobs)
        ]
    return rendered
