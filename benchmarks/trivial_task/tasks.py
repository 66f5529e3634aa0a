"""A trivial task twice: through armada-flyte's local path, and through the SDK's stock mixin loop."""

from __future__ import annotations

from dataclasses import dataclass

import flyte
from flyte.connectors import AsyncConnectorExecutorMixin
from flyte.extend import TaskPluginRegistry

import armada_flyte.connector.service  # noqa: F401  (the stock mixin looks the connector up, in the pod too)
from armada_flyte import ArmadaConfig, ArmadaFunctionTask

RESOURCES = flyte.Resources(cpu="250m", memory="256Mi")


@dataclass(frozen=True)
class StockPathConfig(ArmadaConfig):
    """Selects `StockPathTask`: the same connector, driven by the SDK's own polling loop."""


class StockPathTask(ArmadaFunctionTask):
    async def execute(self, *args, **kwargs):
        return await AsyncConnectorExecutorMixin.execute(self, **kwargs)


TaskPluginRegistry.register(StockPathConfig, StockPathTask)

ours = flyte.TaskEnvironment("bench-ours", image="bench:local", resources=RESOURCES, plugin_config=ArmadaConfig())
stock = flyte.TaskEnvironment("bench-stock", image="bench:local", resources=RESOURCES, plugin_config=StockPathConfig())


@ours.task
async def add_one_ours(x: int) -> int:
    return x + 1


@stock.task
async def add_one_stock(x: int) -> int:
    return x + 1
