"""Tasks for what a person sees in a local run: output, a failure, a retry, a timeout, an OOM kill, and two calls
of one task at once on arm64 (where the embedded server's process pod runner adds a note to each pod's log)."""

from __future__ import annotations

import asyncio
import time

import flyte

from armada_flyte import ArmadaConfig

IMAGE = "localhost:5000/armada-flyte-runtime:test"
SMALL = flyte.Resources(cpu="250m", memory="256Mi")

tasks = flyte.TaskEnvironment("journeys", image=IMAGE, resources=SMALL, plugin_config=ArmadaConfig())
tight = flyte.TaskEnvironment(
    "journeys-tight", image=IMAGE, resources=flyte.Resources(cpu="250m", memory="300Mi"), plugin_config=ArmadaConfig()
)
on_arm = flyte.TaskEnvironment(
    "journeys-arm", image=IMAGE, resources=SMALL, plugin_config=ArmadaConfig(architecture="arm64")
)
driver = flyte.TaskEnvironment("journeys-driver", depends_on=[tasks, tight, on_arm])


@tasks.task
async def chatty(x: int) -> int:
    print(f"chatty says hello {x}", flush=True)
    return x + 1


@tasks.task(retries=1)
async def flaky(x: int) -> int:
    attempt = flyte.ctx().attempt_number
    print(f"flaky attempt {attempt}", flush=True)
    if attempt == 0:
        raise ValueError("the first attempt fails")
    return attempt


@tasks.task
async def broken(x: int) -> int:
    raise ValueError("broken on purpose")


@on_arm.task
async def twin(x: int) -> int:
    print(f"twin {x} here", flush=True)
    return x


@tasks.task(timeout=3)
async def slow(x: int) -> int:
    await asyncio.sleep(300)
    return x


@tight.task
async def hungry(x: int) -> int:
    kept = b"x" * (700 * 2**20)  # over the 300Mi limit, well under the pod's address-space cap
    time.sleep(120)
    return len(kept)


@driver.task
async def journeys(x: int = 1) -> dict[str, str]:
    """Each journey's result, or the type, code and message of the error its caller caught."""

    async def outcome(call) -> str:
        try:
            return f"ok {await call}"
        except Exception as exc:
            return f"{type(exc).__name__} {getattr(exc, 'code', '')}: {exc}"

    calls = {
        "chatty": chatty(x=x),
        "flaky": flaky(x=x),
        "slow": slow(x=x),
        "hungry": hungry(x=x),
        "broken": broken(x=x),
        "twin1": twin(x=1),
        "twin2": twin(x=2),
    }
    results = await asyncio.gather(*(outcome(call) for call in calls.values()))
    return dict(zip(calls, results))
