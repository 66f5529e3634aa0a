"""A connector that does nothing (task type `noop`): c0's own cost per call, for comparison.

Loaded into c0 with `--modules noop_connector` (c0 puts its working directory on sys.path). With
BENCH_VARIANT_SETTINGS (a JSON object of connector settings), it also registers the armada connector with
those settings as task type `armada_variant`: two settings compared round by round in one c0.
"""

from __future__ import annotations

import json
import os
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


ConnectorRegistry.register(NoopConnector(), override=True)

if variant := os.environ.get("BENCH_VARIANT_SETTINGS"):
    from armada_flyte.connector.config.settings import resolve_settings
    from armada_flyte.connector.service import ArmadaConnector

    class VariantConnector(ArmadaConnector):
        name = "Armada Connector (variant settings)"
        task_type_name = "armada_variant"

    ConnectorRegistry.register(VariantConnector(resolve_settings(**json.loads(variant))), override=True)
