"""The trivial task as a user writes it, run through armada-flyte's local path.

Nothing but the authoring surface is imported: this module is what the task's pod (a0) loads.
"""

from __future__ import annotations

import flyte

from armada_flyte import ArmadaConfig

RESOURCES = flyte.Resources(cpu="250m", memory="256Mi")

ours = flyte.TaskEnvironment("bench-ours", image="bench:local", resources=RESOURCES, plugin_config=ArmadaConfig())


@ours.task
async def add_one_ours(x: int) -> int:
    return x + 1
