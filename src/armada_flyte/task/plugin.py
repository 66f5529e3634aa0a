"""The task class every `TaskEnvironment(plugin_config=ArmadaConfig(...))` builds.

Runs at `flyte run` / `flyte deploy` (serialisation) and inside task images, so it imports only
public Flyte and the pure top level: never grpc or armada_client, which task images lack.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Dict

from flyte.models import SerializationContext

from armada_flyte.spec import TASK_TYPE, ArmadaConfig
from armada_flyte.task.flyte_internals import AsyncFunctionTaskTemplate, TaskPluginRegistry
from armada_flyte.task.leaf import as_leaf
from armada_flyte.task.project_defaults import resolve_submission
from armada_flyte.task.termination import exit_cleanly_on_sigterm

log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class ArmadaFunctionTask(AsyncFunctionTaskTemplate):
    """A Flyte function task that runs as an Armada job through the `armada` connector.

    It does not inherit the SDK's `AsyncConnectorExecutorMixin`: `execute` below replaces all
    of it, and importing it would pull grpc into every task image.
    """

    plugin_config: ArmadaConfig = field(default_factory=ArmadaConfig)
    task_type: str = TASK_TYPE

    def custom_config(self, sctx: SerializationContext) -> Dict[str, Any]:
        """Bake the effective settings, and where each came from, into the task template."""
        spec = resolve_submission(self.plugin_config, sctx=sctx, task_name=self.name, image=self.image)
        return spec.to_custom()

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        """Inside the job's pod: run the function. On a laptop: submit through the connector.

        Not the SDK mixin's execute: it looks the connector up first, and a task image has no
        connector registered. A file raw data path runs the function in-process, since Armada
        pods can't read the laptop's files.
        """
        from flyte import storage

        from armada_flyte.task.flyte_internals import internal_ctx  # first use loads the context module

        tctx = internal_ctx().data.task_context
        if tctx is None or tctx.mode == "remote":
            with as_leaf(self.name):
                return await super().execute(*args, **kwargs)
        if not storage.is_remote(tctx.raw_data_path.path):
            log.warning(
                "task %s runs in-process: the raw data path %s is local, and Armada pods can't read it "
                "(use raw_data_path='s3://...' to run through Armada)",
                self.name,
                tctx.raw_data_path.path,
            )
            return await super().execute(*args, **kwargs)
        # The one lazy hop from the task side to local runs: only a laptop run goes there.
        from armada_flyte.local.run import run_through_armada

        return await run_through_armada(self, tctx, **kwargs)


TaskPluginRegistry.register(ArmadaConfig, ArmadaFunctionTask)
exit_cleanly_on_sigterm()  # a laptop run stopped by SIGTERM still cancels its jobs at exit (local.inflight)
