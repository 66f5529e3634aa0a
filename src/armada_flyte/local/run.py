"""Local runs (`flyte.run` without a backend) through Armada, routing around the SDK mixin's gaps.

The stock mixin crashes on a local (file) raw data path, sleeps a fixed 3 s between polls and
once more after the end, never cancels the job when the run is interrupted, and turns a user's
exception into a bare RuntimeError. Here (the task's `execute` runs a local raw data path
in-process, and comes here for an `s3://` one):

- the job's state changes are waited for on the connector's status view (fed by the job set's
  event stream), with `poll_interval_seconds` as the longest wait, and no sleep after the end;
- the code bundle is built and uploaded once per content (concurrent first calls share one): a
  cheap fingerprint of the loaded code comes before Flyte's file walk, tar and upload;
- the task's log lines are printed as they arrive, prefixed with the call's name (`[task:call#attempt arch]`,
  `stream_task_logs`), and a failure or a spill prints one line (`local.console`);
- each attempt of a retried call gets its attempt number (`flyte.ctx().attempt_number` in the task);
- an interrupted or cancelled run cancels its Armada job;
- a failure raises Flyte's error of the failure's kind (`RuntimeUserError` for the user's exception,
  a timeout or an OOM kill; `RuntimeSystemError` otherwise), its `code` the exception type's name,
  `TaskTimeout` or `OOMKilled`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pathlib
import re
import sys
import tempfile
import time
import weakref
from typing import Any, Iterator

from flyte import storage
from flyte.connectors import ConnectorRegistry
from flyte.errors import RuntimeSystemError, RuntimeUserError
from flyte.models import CodeBundle, SerializationContext
from flyteidl2.core.execution_pb2 import TaskExecution

import armada_flyte.connector.service  # noqa: F401  (registers the connector; the task side doesn't load it)
from armada_flyte.armada_names import TERMINAL_STATES, JobState
from armada_flyte.connector.poll.phases import state_name
from armada_flyte.local import console, inflight
from armada_flyte.local.journal import JobRecord, architecture_label, outcome_label, record
from armada_flyte.local.task_logs import TaskLogFollower
from armada_flyte.task.flyte_internals import (
    build_code_bundle,
    build_images,
    convert,
    get_init_config,
    get_proto_task,
    io,
    render_task_template,
)
from armada_flyte.view import known_job_sets

log = logging.getLogger(__name__)

CANCEL_SETTLE_SECONDS = 10.0

_bundles: dict[tuple[str, str, str], CodeBundle] = {}
"""(root dir, digest of the files to bundle, raw data base) -> the uploaded bundle, so a fan-out (and
every later call with the same code) neither tars nor uploads again."""
_bundling: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()
"""One lock per event loop, so concurrent first calls of a run make one bundle between them."""

_calls = console.CallNumbers()
"""Each call's index among its task's calls, and its attempt (`flyte.ctx().attempt_number` in the task)."""


async def run_through_armada(task: Any, tctx: Any, **kwargs: Any) -> Any:
    """Submit one call of `task` through the connector, wait for it, and return its outputs."""
    _remove_local_shadows(tctx.output_path, tctx.raw_data_path.path)
    connector = ConnectorRegistry.get_connector(task.task_type, task.task_type_version)
    cfg = get_init_config()
    root_dir = absolute_root(cfg.root_dir)
    prefix = tctx.raw_data_path.get_random_remote_path()
    code_bundle = await upload_code_bundle(root_dir, tctx.raw_data_path.path, prefix)
    sctx = SerializationContext(
        project=tctx.action.project,
        domain=tctx.action.domain,
        org=tctx.action.org,
        code_bundle=code_bundle,
        version=tctx.version,
        image_cache=await build_images.aio(task.parent_env()) if task.parent_env else None,
        root_dir=root_dir,
    )
    template = render_task_template(get_proto_task(task, sctx, tctx), prefix)
    _claim_own_identity(template.container.args, tctx.action, cfg)
    inputs = await convert.convert_from_native_to_inputs(task.native_interface, **kwargs)
    await io.upload_inputs(inputs, io.inputs_path(prefix))

    index, attempt = _calls.next(task.name, tctx.output_path)
    meta = await connector.submit(task_template=template, output_prefix=prefix, inputs=kwargs, attempt=attempt)
    inflight.started(connector, meta)
    console.quiet_flyte()
    armada_url = (await connector.context()).settings.armada_url
    console.summary.find_view = view_beside
    console.summary.used(armada_url, meta.queue, meta.job_set_id)
    if armada_url != console.summary.in_process:  # an Armada that outlives this process: the view can follow it
        known_job_sets.remember(armada_url, meta.queue, meta.job_set_id)
    started = time.monotonic()
    call = (tctx.output_path, attempt)
    label = console.call_label(index, kwargs)
    name = console.CallName(meta.task or task.name, label, attempt, meta.architecture or ("any" if meta.any_of else ""))
    try:
        outcome, shown = await _wait_for_end(connector, meta, name)
        if inflight.exiting() or inflight.abandoned(meta.job_id):
            inflight.ended(meta)
            await _quiet_until_exit()
    except BaseException:
        if inflight.abandoned(meta.job_id):  # cancelled as the stack stopped; the server may be gone
            inflight.ended(meta)
            raise
        state = await asyncio.shield(_cancel_quietly(connector, meta))
        inflight.ended(meta)
        _record(task.name, meta, None, time.monotonic() - started, call, state)
        raise
    inflight.ended(meta)
    state = await _state_after_cancel(connector, meta) if outcome.cancel else ""
    _record(task.name, meta, outcome, time.monotonic() - started, call, state)
    retries = getattr(task.retries, "count", task.retries) or 0
    _raise_unless_succeeded(task.name, outcome, name, shown, current_job_id(meta, outcome), attempt < retries)
    outputs_path = io.outputs_path(prefix)
    if await storage.exists(outputs_path):
        outputs = await io.load_outputs(outputs_path)
        return await convert.convert_outputs_to_native(task.interface, outputs)
    if task.interface.outputs:
        raise RuntimeSystemError(
            "OutputsMissing",
            f"task {task.name}: Armada job {meta.job_id} succeeded but wrote no outputs to {outputs_path} "
            "(check the job's log; the pod may not reach the blob store)",
        )
    return None


def view_beside(armada_url: str) -> str:
    """The address of the view `armada-flyte dev` serves beside the Armada at `armada_url` ("" for an Armada that
    serves none, or says nothing: a real one)."""
    from armada_flyte.connector.config.settings import resolve_settings
    from armada_flyte.view.armada_reader import ArmadaReader

    try:
        reader = ArmadaReader(resolve_settings(armada_url=armada_url, grpc_timeout_seconds=VIEW_QUESTION_SECONDS))
        try:
            listing = reader.listing()
        finally:
            reader.close()
    except Exception as exc:  # only the last line's hint depends on it
        log.debug("could not ask %s for its view: %s", armada_url, exc)
        return ""
    return listing.view if listing is not None else ""


VIEW_QUESTION_SECONDS = 3.0


async def _quiet_until_exit() -> None:
    """Ctrl-C cancelled the job and said so in one line: nothing more to say or do until the interpreter ends
    (raising here would have Flyte log the cancelled job as a task failure after that line). A sleep, as the
    wait for the job's end was: its timer keeps the task referenced, so it is not collected as garbage, with
    warnings, while the interpreter shuts down."""
    while True:
        await asyncio.sleep(3600)


_IDENTITY_FLAGS = ("--org", "--project", "--domain")
_STAND_INS = {"--project": "default", "--domain": "development"}
"""a0 requires a project and a domain; a local run that names none (`flyte.init(project=...,
domain=...)` does) gets these, not Flyte's test-project / test-domain."""


def _claim_own_identity(args: Any, action: Any, cfg: Any) -> None:
    """Replace the `--org test-org --project test-project --domain test-domain` that Flyte's local
    render gives every job with the run's own values (those of `flyte.init`), or stand-ins (the
    connector gives a0 its org stand-in)."""
    kept, index = [], 0
    while index < len(args):
        if args[index] in _IDENTITY_FLAGS and index + 1 < len(args):
            index += 2
            continue
        kept.append(args[index])
        index += 1
    own = {
        "--org": action.org or cfg.org,
        "--project": action.project or cfg.project or _STAND_INS["--project"],
        "--domain": action.domain or cfg.domain or _STAND_INS["--domain"],
    }
    del args[:]
    args.extend(kept[:1] + [part for flag, value in own.items() if value for part in (flag, value)] + kept[1:])


def _remove_local_shadows(*remote_paths: str) -> None:
    """Undo the empty local folders Flyte's local controller makes for this call's remote paths.

    Before it calls a task, the controller runs `pathlib.Path(path).mkdir(parents=True)` on the
    call's output and raw-data paths even when they are URLs, so `s3://flyte/raw/...` becomes a
    folder `s3:/flyte/raw/...` in the working directory. Only empty folders under the working
    directory that spell a remote path are removed.
    """
    here = pathlib.Path.cwd()
    for remote in remote_paths:
        if not storage.is_remote(remote):
            continue
        folder = pathlib.Path(remote)
        if folder.is_absolute():
            continue
        for shadow in [folder, *folder.parents][:-1]:  # the last parent is "."
            if not (here / shadow).is_dir():
                continue
            try:
                (here / shadow).rmdir()
            except OSError:  # not empty: someone's real folder, or another call's still there
                break


def _record(task_name: str, meta: Any, outcome: Any, seconds: float, call: tuple[str, int], state: str = "") -> None:
    """Note the job for the end-of-run table (`outcome` None: the run was interrupted, `state` what Armada
    said after the cancel); an `any` job shows the architecture it ran on, as `arm64 (any)`, and a preference's
    job that moved on, as `amd64 (spilled from arm64)` or `amd64 (moved from arm64)`."""
    info = outcome.info if outcome else {}
    if outcome is None:
        label = outcome_label(False, cancelled=True)
    else:
        code = outcome.error.code if outcome.error else ""
        label = outcome_label(outcome.phase == TaskExecution.SUCCEEDED, code, outcome.phase == TaskExecution.ABORTED)
    architecture = architecture_label(
        info.get("architecture") or meta.architecture, meta.any_of, info.get("spilled_from"), info.get("moved_from")
    )
    record(
        JobRecord(
            task=task_name.rsplit(".", 1)[-1],
            architecture=architecture,
            source=meta.architecture_source,
            node_group=info.get("node_group") or meta.node_group,
            node=outcome.node if outcome else "",
            outcome=label,
            armada_state=state or info.get("armada_state", ""),
            seconds=seconds,
            job_id=current_job_id(meta, outcome),
            call=call[0],
            attempt=call[1],
        )
    )


def poll_delays(first: float, longest: float) -> Iterator[float]:
    """Waits between polls: `first`, then x1.5 each time, capped at `longest`."""
    delay = first
    while True:
        yield min(delay, longest)
        delay = min(delay * 1.5, longest)


async def _wait_for_end(connector: Any, meta: Any, name: console.CallName) -> tuple[Any, bool]:
    """Poll at once, then wait for the job's state to change (the status view wakes us when its event
    stream says so; the backed-off delays bound each wait), printing the task's new log lines after
    each wait, and one line when the task spills to another architecture; return the terminal outcome,
    without waiting after it, and whether the task's traceback was printed from its log."""
    current = await connector.context()
    settings, view = current.settings, current.view
    follow = settings.timeouts.stream_task_logs
    task_log = None
    job_id = meta.job_id
    for delay in poll_delays(settings.timeouts.first_poll_seconds, settings.timeouts.poll_interval_seconds):
        outcome = await connector.poll(meta)
        if (moved := current_job_id(meta, outcome)) != job_id:  # a preference's next step: a job of its own
            console.say(f"{name} {spill_line(meta, outcome, job_id, moved)}")
            job_id, task_log = moved, None
            name.architecture = outcome.info.get("architecture") or name.architecture
        if follow and task_log is None:
            task_log = TaskLogFollower(current.api, job_id, meta.namespace, name)
        if task_log is not None and outcome.state in _LOG_STATES:
            if name.architecture == "any" and outcome.info.get("architecture"):
                name.architecture = f"{outcome.info['architecture']} (any)"
            await task_log.catch_up()
        if outcome.terminal:
            return outcome, task_log is not None and task_log.lines.traceback_printed
        await view.wait_for_change(job_id, outcome.state, delay)
    raise AssertionError("unreachable")


_JOB_IN_MESSAGE = re.compile(r"\bArmada job (\w+)")


def current_job_id(meta: Any, outcome: Any) -> str:
    """The job the task runs as now: a preference's later step is a job of its own (the outcome's `job_id`
    fact, else the job its message names), else the job create submitted."""
    if outcome is None or not meta.spill_jobs:
        return meta.job_id
    found = outcome.facts.get("job_id") or next(iter(_JOB_IN_MESSAGE.findall(outcome.message)[-1:]), "")
    return found or meta.job_id


def spill_line(meta: Any, outcome: Any, before: str, now: str) -> str:
    """`spilled from arm64 to amd64 after 120 s queued: no arm64 node had room (Armada job A cancelled; now job B)`;
    a move at once says its own why (`moved from arm64 to amd64 at once: ...`) and how job A ended."""
    ended = {"rejected": "rejected", "platform mismatch": "failed"}.get(outcome.info.get("moved_by", ""), "cancelled")
    first = outcome.message.split("; ", 1)[0]
    why = first if first.startswith(("spilled ", "moved ")) else "moved on"
    if first.startswith("moved ") and (info := outcome.info).get("why"):  # its why may hold "; " itself
        why = f"moved from {info.get('moved_from')} to {info.get('architecture')} at once: {info['why']}"
    return f"{why} (Armada job {before} {ended}; now job {now}, job set {meta.job_set_id})"


_LOG_STATES = frozenset({JobState.RUNNING, JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})
"""States in which the job's pod may have written to its log."""


async def _state_after_cancel(connector: Any, meta: Any, within: float = 5.0) -> str:
    """Armada's state for a job the connector cancelled (over its timeout), once the cancel has landed
    (bounded: what Armada says at the end of `within` seconds)."""
    current = await connector.context()
    deadline = time.monotonic() + within
    while True:
        state = await current.view.state_of(meta.job_id, meta.queue, meta.job_set_id)
        if state in TERMINAL_STATES or time.monotonic() >= deadline:
            return state_name(state)
        await current.view.wait_for_change(meta.job_id, state, max(0.0, deadline - time.monotonic()))


async def _cancel_quietly(connector: Any, meta: Any) -> str:
    """Cancel the job, and return the state Armada then reports (for the jobs table).

    Real Armada cancels asynchronously (the cancel goes through its log and scheduler): the state
    reads RUNNING for a moment after the call returns, so it is read until it is terminal, for at
    most CANCEL_SETTLE_SECONDS."""
    try:
        await connector.delete(meta)
        log.info("cancelled Armada job %s because the run was interrupted", meta.job_id)
        return await _state_after_cancel(connector, meta, within=CANCEL_SETTLE_SECONDS)
    except Exception as exc:  # the interruption is what the caller must see
        log.warning("could not cancel Armada job %s: %s", meta.job_id, exc)
        return f"cancel failed: {exc}"


def _raise_unless_succeeded(
    task_name: str, outcome: Any, name: console.CallName, shown: bool, job_id: str, retries_left: bool
) -> None:
    """Flyte's error of the failure's kind (the kind `custom_info` gives it), so retries and callers see one;
    first one line on the console (the message's first part only when the task's traceback was not printed),
    and Flyte's own reports of the error are demoted to debug (`console.QuietFlyte`)."""
    if outcome.phase == TaskExecution.SUCCEEDED:
        return
    error = outcome.error
    if error is not None and error.kind == "USER":
        failure: Exception = RuntimeUserError(error.code, f"task {task_name} failed: {outcome.message}")
    else:
        code = error.code if error is not None else outcome.info.get("armada_state", "ArmadaJobFailed")
        failure = RuntimeSystemError(code, f"task {task_name}: {outcome.message}")
    retried = retries_left and (error is None or error.recoverable)
    then = "; Flyte retries it" if retried else ""
    if shown and error is not None:
        console.say(f"{name} failed: {error.code} in Armada job {job_id} (its traceback is above){then}")
    else:
        console.say(f"{name} failed: {console.headline(outcome.message)}{then}")
    console.reported.add(str(failure))
    console.reported.tasks.add(task_name)
    raise failure


def absolute_root(root_dir: Any) -> pathlib.Path:
    """Flyte's root dir as an absolute path: `flyte.init(root_dir=".")` keeps the string it was given,
    and Flyte's bundler compares it with the loaded modules' absolute paths."""
    return pathlib.Path(root_dir or pathlib.Path.cwd()).expanduser().resolve()


async def upload_code_bundle(root_dir: pathlib.Path, raw_base: str, prefix: str) -> Any:
    """The code bundle, built and uploaded once per content of its files (and raw data path) for this process."""
    loop = asyncio.get_running_loop()
    lock = _bundling.get(loop) or _bundling.setdefault(loop, asyncio.Lock())
    async with lock:
        return await _bundle(root_dir, raw_base, prefix)


async def _bundle(root_dir: pathlib.Path, raw_base: str, prefix: str) -> Any:
    key = (str(root_dir), _code_fingerprint(root_dir), raw_base)
    cached = _bundles.get(key)
    if cached is not None:
        return cached
    with tempfile.TemporaryDirectory(prefix="armada-flyte-bundle-") as tmp:
        local = await build_code_bundle(from_dir=root_dir, dryrun=True, copy_bundle_to=pathlib.Path(tmp))
        if local.tgz is None:
            raise RuntimeError(f"Flyte built no code bundle from {root_dir}")
        remote = await storage.put(local.tgz, prefix + "/code_bundle/" + os.path.basename(local.tgz))
    bundle = _bundles[key] = CodeBundle(tgz=remote, computed_version=local.computed_version, destination="/opt/flyte/")
    return bundle


def _code_fingerprint(root_dir: pathlib.Path) -> frozenset[tuple[str, int, int]]:
    """What Flyte's "loaded modules" bundle is made of, cheaply: every loaded module file under the root
    (with its size and modification time) and the root's ignore files.

    Flyte finds the files itself by resolving the path of every loaded module (about 0.5 s here); a
    string match on the paths is enough to notice that the code or the set of modules changed.
    """
    roots = tuple({str(root_dir) + os.sep, str(root_dir.resolve()) + os.sep})
    paths = {
        file for module in list(sys.modules.values()) if isinstance(file := getattr(module, "__file__", None), str)
    }
    paths = {p for p in paths if p.startswith(roots)}
    paths |= {str(root_dir / name) for name in (".gitignore", ".flyteignore")}
    found = set()
    for path in paths:
        try:
            stat = os.stat(path)
        except OSError:
            continue
        found.add((path, stat.st_size, stat.st_mtime_ns))
    return frozenset(found)
