"""A parent task run as its pod runs it on a Flyte backend, its child calls handed to `c0` as the backend would.

The parent's body runs under Flyte's own entry point for a task pod (`convert_and_run`: a task context in mode
"remote", attempt FLYTE_ATTEMPT_NUMBER), so whatever it calls reaches the controller. Where a pod's controller
(Flyte's `RemoteController`) would enqueue an action with the backend's queue service, `BackendStandIn` does the
backend's part: for each call it serialises the task as that controller does (`translate_task_to_wire` with the
parent's task context, the task the call was made on, overrides and all), uploads its inputs and names its
action with Flyte's own functions, then sends c0 a CreateTask with the template rendered and asks GetTask until
the phase is terminal, as Flyte's connector plugin does.

One difference from a pod: the parent's code is not at its bundle's destination (/opt/flyte/, where a pod
unpacks it and where the member pods unpack it again), so the serialisation's root is the folder the code is
in. The member templates are those a pod at /opt/flyte/ makes: the module path is relative to the root.
"""

from __future__ import annotations

import asyncio
import dataclasses
import pathlib
from typing import Any, Awaitable, Callable, Optional

from flyteidl2.connector import connector_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

from support.backend_templates import rendered
from support.c0_service import ARMADA_TASKS, TERMINAL, poll_until_done
from support.flyte_metadata import execution_metadata


@dataclasses.dataclass(frozen=True)
class Created:
    """One child call as c0 saw it: the backend's action name, the template sent, what create returned."""

    action: str
    template: Any
    resource_meta: bytes


class BackendStandIn:
    """The controller a parent's calls reach, doing what Flyte's backend does with them (see the module)."""

    def __init__(
        self,
        c0: Any,
        root_dir: pathlib.Path,
        before_create: Optional[Callable[[str, Any], Awaitable[None]]] = None,
        poll_timeout: float = 240.0,
    ):
        self._c0 = c0
        self._root_dir = root_dir
        self._before_create = before_create
        self._poll_timeout = poll_timeout
        self.created: list[Created] = []
        self.answers: dict[str, Any] = {}
        """Each action's last GetTask resource."""

    async def submit(self, task: Any, *args: Any, **kwargs: Any) -> Any:
        from flyte._context import internal_ctx
        from flyte._internal.runtime import convert, io
        from flyte._internal.runtime.task_serde import translate_task_to_wire
        from flyte.models import SerializationContext

        tctx = internal_ctx().data.task_context
        sctx = SerializationContext(
            project=tctx.action.project,
            domain=tctx.action.domain,
            org=tctx.action.org,
            code_bundle=tctx.code_bundle,
            version=tctx.version,
            image_cache=tctx.compiled_image_cache,
            root_dir=self._root_dir,
        )
        spec = translate_task_to_wire(task, sctx, task_context=tctx)
        inputs = await convert.convert_from_native_to_inputs(task.native_interface, *args, **kwargs)
        identity = convert.generate_task_identity_hash(spec.task_template)
        inputs_hash = convert.generate_inputs_hash_from_proto(inputs.proto_inputs)
        sequence = tctx._call_counter.next(f"{identity}:{inputs_hash}")
        action, prefix = convert.generate_sub_action_id_and_output_path(tctx, identity, inputs_hash, sequence)
        await io.upload_inputs(inputs, io.inputs_path(prefix))
        resource = await self._run_on_c0(action.run_name, action.name, rendered(spec.task_template, prefix), prefix)
        if resource.phase != TaskExecution.SUCCEEDED:
            raise RuntimeError(
                f"{task.name} ({action.name}): {TaskExecution.Phase.Name(resource.phase)}: {resource.message}"
            )
        outputs = await io.load_outputs(io.outputs_path(prefix))
        return await convert.convert_outputs_to_native(task.native_interface, outputs)

    async def _run_on_c0(self, run: str, action: str, template: Any, prefix: str) -> Any:
        """CreateTask, then GetTask until the phase is terminal (DeleteTask when the parent cancels the call)."""
        if self._before_create is not None:
            await self._before_create(action, template)
        request = connector_pb2.CreateTaskRequest(
            template=template,
            output_prefix=prefix,
            task_execution_metadata=execution_metadata(run, action, task=template.id.name),
        )
        meta = (await asyncio.to_thread(self._c0.CreateTask, request, timeout=60)).resource_meta
        self.created.append(Created(action, template, meta))

        def record(resource: Any) -> None:
            self.answers[action] = resource

        try:
            return await asyncio.to_thread(
                poll_until_done, self._c0, meta, TERMINAL, self._poll_timeout, on_poll=record, interval=0.2
            )
        except asyncio.CancelledError:
            delete = connector_pb2.DeleteTaskRequest(resource_meta=meta, task_category=ARMADA_TASKS)
            await asyncio.to_thread(self._c0.DeleteTask, delete, timeout=30)
            raise

    async def finalize_parent_action(self, action_id: Any) -> None:
        """Nothing to close: the stand-in keeps no watch on the backend."""


async def run_parent(task: Any, controller: BackendStandIn, bucket: str, run: str, bundle: Any, **inputs: Any):
    """Run `task` as attempt 0 of action a0 of `run` runs in its pod, its calls going to `controller`; Flyte's
    (outputs, error) for it."""
    from flyte._internal.controllers import _ControllerState
    from flyte._internal.runtime import convert
    from flyte._internal.runtime.taskrunner import convert_and_run
    from flyte.models import ActionID, RawDataPath

    base = f"s3://{bucket}/remote-parent/{run}"
    previous = _ControllerState.controller
    _ControllerState.controller = controller
    try:
        return await convert_and_run(
            task=task,
            action=ActionID(name="a0", run_name=run, project="proj", domain="dev", org=""),
            controller=controller,
            raw_data_path=RawDataPath(path=f"{base}/raw"),
            version="v1",
            output_path=f"{base}/a0/0",
            run_base_dir=base,
            inputs=await convert.convert_from_native_to_inputs(task.native_interface, **inputs),
            code_bundle=bundle,
        )
    finally:
        _ControllerState.controller = previous
