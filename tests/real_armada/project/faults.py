"""Tasks the fault tests run as real a0 pods: each one waits on a file the test controls, so the
test can break a part of the run while the task is known to be running."""

from __future__ import annotations

import asyncio
import pathlib

import flyte

from armada_flyte import ArmadaConfig

IMAGE = "localhost:5000/armada-flyte-runtime:test"

faults = flyte.TaskEnvironment(
    "faults",
    image=IMAGE,
    resources=flyte.Resources(cpu="250m", memory="256Mi"),
    plugin_config=ArmadaConfig(architecture="amd64"),
)


@faults.task
async def second_run_succeeds(folder: str) -> int:
    """The first run records that it started and waits to be killed; a later run returns how many runs started."""
    starts = pathlib.Path(folder) / "starts"
    with starts.open("a") as out:
        out.write("start\n")
    count = len(starts.read_text().splitlines())
    while count == 1:
        await asyncio.sleep(0.2)
    return count


@faults.task
async def returns_once_released(folder: str) -> int:
    """Records that it started, then returns 7 once the test creates `release` beside that record."""
    (pathlib.Path(folder) / "started").touch()
    while not (pathlib.Path(folder) / "release").exists():
        await asyncio.sleep(0.1)
    return 7
