"""A run whose truth the view must tell: a task that raises (its pod exits 0, Armada says SUCCEEDED) and a task
preferring arm64 that spills to amd64 while two holders fill every arm64 CPU."""

from __future__ import annotations

import asyncio
import os
import pathlib
import time

import flyte

from armada_flyte import ArmadaConfig

IMAGE = "localhost:5000/armada-flyte-runtime:test"
SMALL = flyte.Resources(cpu="250m", memory="256Mi")
NODE_CPUS = 4

plain = flyte.TaskEnvironment("outcomes", image=IMAGE, resources=SMALL, plugin_config=ArmadaConfig())
holders = flyte.TaskEnvironment(
    "outcomes-hold",
    image=IMAGE,
    resources=flyte.Resources(cpu=str(NODE_CPUS), memory="256Mi"),
    plugin_config=ArmadaConfig(architecture="arm64"),
)
preferring = flyte.TaskEnvironment(
    "outcomes-prefer",
    image=IMAGE,
    resources=flyte.Resources(cpu="1", memory="256Mi"),
    plugin_config=ArmadaConfig(architecture=["arm64", "amd64"], spill_after=1),
)
driver = flyte.TaskEnvironment("outcomes-driver", depends_on=[plain, holders, preferring])


@plain.task
async def raises(x: int) -> int:
    raise ValueError(f"raised on purpose ({x})")


@holders.task
async def hold(folder: str, n: int) -> int:
    """Holds a whole arm64 node until `folder/release` exists; says it runs with `folder/holding-n`."""
    pathlib.Path(folder, f"holding-{n}").touch()
    while not os.path.exists(os.path.join(folder, "release")):
        time.sleep(0.05)
    return n


@preferring.task
async def prefers(x: int) -> int:
    return x


@driver.task
async def scenario(folder: str) -> str:
    """The raising task (caught), the spill once both holders run, then the holders released."""
    held = [asyncio.ensure_future(hold(folder=folder, n=n)) for n in range(2)]
    deadline = time.monotonic() + 120
    while not all(os.path.exists(os.path.join(folder, f"holding-{n}")) for n in range(2)):
        if time.monotonic() > deadline:
            raise TimeoutError("the holders never ran")
        await asyncio.sleep(0.05)
    try:
        await raises(x=1)
    except Exception as exc:
        said = f"{type(exc).__name__}: {exc}"
    moved = await prefers(x=2)
    pathlib.Path(folder, "release").touch()
    await asyncio.gather(*held)
    return f"{said}; prefers={moved}"
