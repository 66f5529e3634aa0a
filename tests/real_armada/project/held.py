"""A trivial task the fault tests hold running: it waits for a gate file, then ends, so a fault can
strike while every task runs and each task's right ending is known in advance."""

from __future__ import annotations

import asyncio
import pathlib

import flyte

from armada_flyte import ArmadaConfig

IMAGE = "localhost:5000/armada-flyte-runtime:test"
GATE_WAIT_SECONDS = 900
"""Bound on the wait, so a test that never opens the gate leaves no pod behind for long (it then fails)."""

held_env = flyte.TaskEnvironment(
    "faults-held",
    image=IMAGE,
    resources=flyte.Resources(cpu="100m", memory="128Mi"),
    plugin_config=ArmadaConfig(architecture="amd64"),
)


@held_env.task
async def held(gate: str, x: int, fail: bool) -> int:
    """Once `gate` exists: 2 * x, or (with `fail`) a ValueError naming x."""
    for _ in range(GATE_WAIT_SECONDS * 5):
        if pathlib.Path(gate).exists():
            break
        await asyncio.sleep(0.2)
    else:
        raise TimeoutError(f"the gate {gate} did not open within {GATE_WAIT_SECONDS}s")
    if fail:
        raise ValueError(f"task {x} fails as asked")
    return 2 * x
