"""Local runs (`flyte.run` without a backend) through Armada, routing around the SDK mixin's gaps.

The stock mixin crashes on a local (file) raw data path, sleeps a fixed 3 s between polls and
once more after the end, never cancels the job when the run is interrupted, and turns a user's
exception into a bare RuntimeError. Here:

- a file raw data path runs the function in-process (pods can't read the laptop's files);
  give the run an `s3://` raw_data_path to go through Armada;
- polling starts at once and backs off to `poll_interval_seconds`, with no sleep after the end;
- an interrupted or cancelled run cancels its Armada job;
- a failure raises `flyte.errors.RuntimeUserError` with the user's exception type as `code`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pathlib
import tempfile
import time
from typing import Any, Iterator

log = logging.getLogger(__name__)

_bundles: dict[tuple[str, str, str], str] = {}
"""(root dir, bundle hash, raw data base) -> uploaded tgz, so a fan-out uploads its code once."""


async def execute_task(task: Any, *args: Any, **kwargs: Any) -> Any:
    """Inside the job's pod: run the function. On a laptop: submit through the connector."""
    from flyte import storage
    from flyte._context import internal_ctx
    from flyte._task import AsyncFunctionTaskTemplate

    tctx = internal_ctx().data.task_context
    if tctx is None or tctx.mode == "remote":
        # Inside the pod. Not the SDK mixin's execute: it looks the connector up first, and a
        # task image has no connector registered.
        return await AsyncFunctionTaskTemplate.execute(task, *args, **kwargs)
    if not storage.is_remote(tctx.raw_data_path.path):
        log.warning(
            "task %s runs in-process: the raw data path %s is local, and Armada pods can't read it "
            "(use raw_data_path='s3://...' to run through Armada)",
            task.name,
            tctx.raw_data_path.path,
        )
        return await AsyncFunctionTaskTemplate.execute(task, *args, **kwargs)
    return await _through_armada(task, tctx, **kwargs)


async def _through_armada(task: Any, tctx: Any, **kwargs: Any) -> Any:
    from flyte._deploy import build_images
    from flyte._initialize import get_init_config
    from flyte._internal.runtime import convert, io
    from flyte._internal.runtime.task_serde import get_proto_task
    from flyte.connectors import ConnectorRegistry
    from flyte.connectors.utils import _render_task_template
    from flyte.models import SerializationContext

    import armada_flyte.connector  # noqa: F401  (registers the connector; the task side doesn't load it)

    connector = ConnectorRegistry.get_connector(task.task_type, task.task_type_version)
    cfg = get_init_config()
    prefix = tctx.raw_data_path.get_random_remote_path()
    code_bundle = await upload_code_bundle(cfg.root_dir, tctx.raw_data_path.path, prefix)
    sctx = SerializationContext(
        project=tctx.action.project,
        domain=tctx.action.domain,
        org=tctx.action.org,
        code_bundle=code_bundle,
        version=tctx.version,
        image_cache=await build_images.aio(task.parent_env()) if task.parent_env else None,
        root_dir=cfg.root_dir,
    )
    template = _render_task_template(get_proto_task(task, sctx, tctx), prefix)
    inputs = await convert.convert_from_native_to_inputs(task.native_interface, **kwargs)
    await io.upload_inputs(inputs, io.inputs_path(prefix))

    meta = await connector.create(task_template=template, output_prefix=prefix, inputs=kwargs)
    started = time.monotonic()
    try:
        outcome = await _wait_for_end(connector, meta)
    except BaseException:
        state = await asyncio.shield(_cancel_quietly(connector, meta))
        _record(task.name, meta, None, time.monotonic() - started, state)
        raise
    _record(task.name, meta, outcome, time.monotonic() - started)
    _raise_unless_succeeded(task.name, outcome)
    outputs_path = io.outputs_path(prefix)
    from flyte import storage

    if await storage.exists(outputs_path):
        outputs = await io.load_outputs(outputs_path)
        return await convert.convert_outputs_to_native(task.interface, outputs)
    if task.interface.outputs:
        from flyte.errors import RuntimeSystemError

        raise RuntimeSystemError(
            "OutputsMissing",
            f"task {task.name}: Armada job {meta.job_id} succeeded but wrote no outputs to {outputs_path} "
            "(check the job's log; the pod may not reach the blob store)",
        )
    return None


def _record(task_name: str, meta: Any, outcome: Any, seconds: float, state: str = "") -> None:
    """Note the job for the end-of-run table (`outcome` None: the run was interrupted)."""
    from armada_flyte.journal import JobRecord, record

    record(
        JobRecord(
            task=task_name.rsplit(".", 1)[-1],
            architecture=meta.architecture,
            source=meta.architecture_source,
            node_group=meta.node_group,
            node=outcome.node if outcome else "",
            state=outcome.info.get("armada_state", "") if outcome else state,
            seconds=seconds,
            job_id=meta.job_id,
        )
    )


def poll_delays(first: float, longest: float) -> Iterator[float]:
    """Waits between polls: `first`, then x1.5 each time, capped at `longest`."""
    delay = first
    while True:
        yield min(delay, longest)
        delay = min(delay * 1.5, longest)


async def _wait_for_end(connector: Any, meta: Any) -> Any:
    """Poll at once, then back off to the configured interval; return the terminal outcome, without
    sleeping after it."""
    from armada_flyte.settings import resolve_settings

    settings = resolve_settings()
    for delay in poll_delays(settings.first_poll_seconds, settings.poll_interval_seconds):
        outcome = await connector.poll(meta)
        if outcome.terminal:
            return outcome
        await asyncio.sleep(delay)
    raise AssertionError("unreachable")


async def _cancel_quietly(connector: Any, meta: Any) -> str:
    """Cancel the job, and return the state Armada then reports (for the jobs table)."""
    try:
        await connector.delete(meta)
        log.info("cancelled Armada job %s because the run was interrupted", meta.job_id)
        return await connector.armada_state(meta)
    except Exception as exc:  # the interruption is what the caller must see
        log.warning("could not cancel Armada job %s: %s", meta.job_id, exc)
        return f"cancel failed: {exc}"


def _raise_unless_succeeded(task_name: str, outcome: Any) -> None:
    from flyte.errors import RuntimeSystemError, RuntimeUserError
    from flyteidl2.core.execution_pb2 import TaskExecution

    if outcome.phase == TaskExecution.SUCCEEDED:
        return
    if outcome.task_error is not None:
        error = outcome.task_error
        raise RuntimeUserError(error.code, f"task {task_name} failed: {outcome.message}")
    raise RuntimeSystemError(outcome.info.get("armada_state", "ArmadaJobFailed"), f"task {task_name}: {outcome.message}")


async def upload_code_bundle(root_dir: pathlib.Path, raw_base: str, prefix: str) -> Any:
    """Build the code bundle, and upload it once per (code, raw data path) for this process."""
    from flyte import storage
    from flyte._code_bundle import build_code_bundle
    from flyte.models import CodeBundle

    with tempfile.TemporaryDirectory(prefix="armada-flyte-bundle-") as tmp:
        local = await build_code_bundle(from_dir=root_dir, dryrun=True, copy_bundle_to=pathlib.Path(tmp))
        if local.tgz is None:
            raise RuntimeError(f"Flyte built no code bundle from {root_dir}")
        key = (str(root_dir), local.computed_version, raw_base)
        remote = _bundles.get(key)
        if remote is None:
            remote = await storage.put(local.tgz, prefix + "/code_bundle/" + os.path.basename(local.tgz))
            _bundles[key] = remote
    return CodeBundle(tgz=remote, computed_version=local.computed_version, destination="/opt/flyte/")
