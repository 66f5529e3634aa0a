"""Workflows the end-to-end tests run for real: each Armada task is a job whose pod runs a0."""

from __future__ import annotations

import asyncio
import os
import pathlib
import platform
from dataclasses import dataclass

import flyte

from armada_flyte import ArmadaConfig, Gang

IMAGE = "localhost:5000/armada-flyte-runtime:test"
SMALL = flyte.Resources(cpu="250m", memory="256Mi")

arm = flyte.TaskEnvironment("e2e-arm", image=IMAGE, resources=SMALL, plugin_config=ArmadaConfig(architecture="arm64"))
amd = flyte.TaskEnvironment("e2e-amd", image=IMAGE, resources=SMALL, plugin_config=ArmadaConfig(architecture="amd64"))
default = flyte.TaskEnvironment("e2e-default", image=IMAGE, resources=SMALL, plugin_config=ArmadaConfig())
trio = flyte.TaskEnvironment(
    "e2e-gang",
    image=IMAGE,
    resources=SMALL,
    plugin_config=ArmadaConfig(gang_id="trio", gang_cardinality=3, architecture="arm64"),
)
anywhere = flyte.TaskEnvironment(
    "e2e-any", image=IMAGE, resources=SMALL, plugin_config=ArmadaConfig(architecture="any")
)
crew = flyte.TaskEnvironment("e2e-crew", image=IMAGE, resources=SMALL, plugin_config=ArmadaConfig(architecture="any"))
driver = flyte.TaskEnvironment("e2e-driver", depends_on=[arm, amd, default, trio, anywhere, crew])


@dataclass
class Stats:
    count: int
    total: float
    machine: str


@arm.task
async def summarise(values: list[float]) -> Stats:
    return Stats(count=len(values), total=sum(values), machine=platform.machine())


@anywhere.task
async def triple(x: int) -> int:
    return 3 * x


@amd.task
async def square(x: int) -> int:
    return x * x


@amd.task(timeout=flyte.Timeout(max_queued_time=4))
async def square_soon(x: int) -> int:
    """Gives up when it can't start within 4s (the queued-report test fills the amd64 nodes)."""
    return x * x


@default.task
async def explode(reason: str) -> int:
    raise ValueError(f"bad input: {reason}")


@default.task
async def double(x: int) -> int:
    return 2 * x


@default.task
async def linger(pid_file: str) -> int:
    pathlib.Path(pid_file).write_text(str(os.getpid()))
    await asyncio.sleep(600)
    return 0


@default.task
async def nests(x: int) -> int:
    return await double(x=x)


@driver.task
async def fan_out(n: int) -> list[int]:
    return list(await asyncio.gather(*(square(x=i) for i in range(n))))


@trio.task
async def member(rank: int) -> int:
    return rank


@driver.task
async def gang_of_three() -> list[int]:
    return list(await asyncio.gather(*(member(rank=r) for r in range(3))))


@crew.task
async def crew_member(rank: int) -> int:
    return rank


@driver.task
async def crew_gang(n: int, declared: int = 0, architecture: str = "", spill_after: float = 0.0) -> list[int]:
    """n members of one gang, with no gang_id or gang_cardinality written anywhere; `declared`: a size to
    check the count against, `architecture`: the Gang's, for every member (else their own: `any`)."""
    placement = {"architecture": architecture or None, "spill_after": spill_after or None}
    async with Gang("crew", cardinality=declared or None, **placement) as gang:
        for rank in range(n):
            gang.add(crew_member, rank=rank)
    return gang.results


@driver.task
async def gang_with_a_failing_member(pid_dir: str) -> list[int]:
    """Three members that would run for ten minutes, and one that fails at once."""
    async with Gang("doomed") as gang:
        for rank in range(3):
            gang.add(linger, pid_file=f"{pid_dir}/{rank}")
        gang.add(explode, reason="one member fails")
    return gang.results


@default.task
async def fails_if(fail: bool) -> int:
    if fail:
        raise ValueError("failing as asked")
    return 1


@driver.task
async def gang_with_a_retried_member() -> list[int]:
    """flaky fails its first attempt and has retries=2: in a gang it runs once."""
    async with Gang("once") as gang:
        gang.add(flaky, succeed_on=1)
        gang.add(double, x=1)
    return gang.results


@driver.task
async def gang_retried_whole(marker: str) -> list[int]:
    """A gang whose member fails on the first attempt of the task holding the gang: that task's `retries=` runs
    the whole gang again."""
    return await gang_attempt(marker=marker)


@driver.task(retries=1)
async def gang_attempt(marker: str) -> list[int]:
    first = not os.path.exists(marker)  # the driver runs on this machine: a file says which attempt this is
    pathlib.Path(marker).touch()
    async with Gang("again") as gang:
        gang.add(fails_if, fail=first)
        gang.add(double, x=1)
    return gang.results


@default.task(retries=2)
async def flaky(succeed_on: int) -> int:
    """Fails with a recoverable error until attempt `succeed_on`; returns the attempt that succeeded."""
    attempt = flyte.ctx().attempt_number
    if attempt < succeed_on:
        raise ConnectionError(f"flaky on attempt {attempt}")
    return attempt
