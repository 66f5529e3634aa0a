"""The same trivial task through the SDK's stock mixin loop, for comparison.

Its pod needs the connector registered (the stock mixin looks it up there too), so this module
imports the connector service, which `ours.py` leaves out as a user's task module does.
"""

from __future__ import annotations

from dataclasses import dataclass

import flyte
from flyte.connectors import AsyncConnectorExecutorMixin
from flyte.extend import TaskPluginRegistry
from ours import RESOURCES

import armada_flyte.connector.service  # noqa: F401  (the stock mixin looks the connector up, in the pod too)
from armada_flyte import ArmadaConfig, ArmadaFunctionTask


@dataclass(frozen=True)
class StockPathConfig(ArmadaConfig):
    """Selects `StockPathTask`: the same connector, driven by the SDK's own polling loop."""


class StockPathTask(ArmadaFunctionTask):
    async def execute(self, *args, **kwargs):
        return await AsyncConnectorExecutorMixin.execute(self, **kwargs)


TaskPluginRegistry.register(StockPathConfig, StockPathTask)

stock = flyte.TaskEnvironment("bench-stock", image="bench:local", resources=RESOURCES, plugin_config=StockPathConfig())


@stock.task
async def add_one_stock(x: int) -> int:
    return x + 1
