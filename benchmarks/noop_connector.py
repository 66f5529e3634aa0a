"""A connector that does nothing (task type `noop`): c0's own cost per call, for comparison.

Loaded into c0 with `--modules noop_connector` (c0 puts its working directory on sys.path). Task type
`noop_second_loop` is the no-op whose first create starts what the armada connector's status view adds to c0: a
thread running an asyncio loop with a grpc.aio channel on it (`bench_second_aio_loop.py`). With
BENCH_VARIANT_SETTINGS (a JSON object of connector settings), it also registers the armada connector with
those settings as task type `armada_variant`: two settings compared round by round in one c0.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from dataclasses import dataclass
from typing import Any

from flyte.connectors import AsyncConnector, ConnectorRegistry, Resource, ResourceMeta
from flyteidl2.core.execution_pb2 import TaskExecution


@dataclass
class NoopMetadata(ResourceMeta):
    name: str


class NoopConnector(AsyncConnector[NoopMetadata]):
    name = "No-op Connector"
    task_type_name = "noop"
    metadata_type = NoopMetadata

    async def create(self, task_template: Any, output_prefix: str, inputs: Any = None, **kwargs: Any) -> NoopMetadata:
        return NoopMetadata(name=task_template.id.name)

    async def get(self, resource_meta: NoopMetadata, **kwargs: Any) -> Resource:
        return Resource(phase=TaskExecution.RUNNING)

    async def delete(self, resource_meta: NoopMetadata, **kwargs: Any) -> None:
        return None


class SecondLoopConnector(NoopConnector):
    """The no-op, but its first create binds a second event loop to grpc.aio, as the status view's thread does."""

    name = "No-op Connector with a second grpc.aio loop"
    task_type_name = "noop_second_loop"
    _loop_started = threading.Event()

    async def create(self, task_template: Any, output_prefix: str, inputs: Any = None, **kwargs: Any) -> NoopMetadata:
        if not self._loop_started.is_set():
            threading.Thread(target=self._hold_a_channel, name="second-aio-loop", daemon=True).start()
            await asyncio.to_thread(self._loop_started.wait, 30)
        return await super().create(task_template, output_prefix, inputs, **kwargs)

    def _hold_a_channel(self) -> None:
        import grpc

        async def hold() -> None:
            async with grpc.aio.insecure_channel("127.0.0.1:1"):  # never used: its loop is bound to grpc.aio
                self._loop_started.set()
                await asyncio.Event().wait()

        asyncio.run(hold())


ConnectorRegistry.register(NoopConnector(), override=True)
ConnectorRegistry.register(SecondLoopConnector(), override=True)

if variant := os.environ.get("BENCH_VARIANT_SETTINGS"):
    from armada_flyte.connector.config.settings import resolve_settings
    from armada_flyte.connector.service import ArmadaConnector, loading_loop

    class VariantConnector(ArmadaConnector):
        name = "Armada Connector (variant settings)"
        task_type_name = "armada_variant"

    variant_settings = resolve_settings(**json.loads(variant))
    ConnectorRegistry.register(VariantConnector(variant_settings, view_loop=loading_loop()), override=True)
