"""A small multi-architecture pipeline: prepare, train on arm64 (a fan-out), evaluate on amd64.

Run it with the README's first command, or directly:

    python examples/multiarch.py            # starts the embedded Armada server and blob store
    ARMADA_FLYTE_RUNTIME_IMAGE=REGISTRY/armada-flyte-runtime:TAG \
      python examples/multiarch.py --pod-runner docker   # pods as linux/<arch> containers of that image
    ARMADA_URL=... FLYTE_BLOB_ENDPOINT=... python examples/multiarch.py   # a real cluster
    python examples/multiarch.py --armada-url HOST:PORT   # an Armada on this machine (./scripts/demo.sh --real-armada)

Every task of an `ArmadaConfig` environment runs as an Armada job; the `pipeline` driver runs
on your machine and calls them (in local mode, Armada tasks are leaves).
"""

from __future__ import annotations

import asyncio
import math
import os
import pathlib
import platform
import random
from dataclasses import dataclass
from typing import Any

import flyte

from armada_flyte import ArmadaConfig

IMAGE = os.environ.get("ARMADA_FLYTE_RUNTIME_IMAGE", "localhost:5000/armada-flyte-runtime:0.1.0")
RESOURCES = flyte.Resources(cpu=1, memory="1Gi")

# No architecture: takes the project default, else the platform's default architecture.
prep_env = flyte.TaskEnvironment("prep", image=IMAGE, resources=RESOURCES, plugin_config=ArmadaConfig())
train_env = flyte.TaskEnvironment(
    "train", image=IMAGE, resources=RESOURCES, plugin_config=ArmadaConfig(architecture="arm64")
)
eval_env = flyte.TaskEnvironment(
    "evaluate", image=IMAGE, resources=RESOURCES, plugin_config=ArmadaConfig(architecture="amd64")
)
driver = flyte.TaskEnvironment("driver", depends_on=[prep_env, train_env, eval_env])


@dataclass
class Dataset:
    xs: list[float]
    ys: list[float]


@dataclass
class Model:
    slope: float
    intercept: float
    learning_rate: float


@prep_env.task
async def prepare(n: int, seed: int) -> Dataset:
    """Noisy points on y = 3x + 1."""
    rng = random.Random(seed)
    xs = [rng.uniform(-1, 1) for _ in range(n)]
    return Dataset(xs=xs, ys=[3 * x + 1 + rng.gauss(0, 0.1) for x in xs])


@train_env.task
async def train(data: Dataset, learning_rate: float, epochs: int) -> Model:
    """Plain gradient descent on mean squared error."""
    slope, intercept = 0.0, 0.0
    n = len(data.xs)
    for _ in range(epochs):
        grad_slope = sum(2 * (slope * x + intercept - y) * x for x, y in zip(data.xs, data.ys)) / n
        grad_intercept = sum(2 * (slope * x + intercept - y) for x, y in zip(data.xs, data.ys)) / n
        slope -= learning_rate * grad_slope
        intercept -= learning_rate * grad_intercept
    return Model(slope=slope, intercept=intercept, learning_rate=learning_rate)


@eval_env.task
async def evaluate(model: Model, data: Dataset) -> float:
    """Root mean squared error of the model on the data."""
    errors = [(model.slope * x + model.intercept - y) ** 2 for x, y in zip(data.xs, data.ys)]
    return math.sqrt(sum(errors) / len(errors))


@driver.task
async def pipeline(n: int = 200, epochs: int = 200) -> float:
    data = await prepare(n=n, seed=7)
    models = await asyncio.gather(*(train(data=data, learning_rate=lr, epochs=epochs) for lr in (0.01, 0.05, 0.2)))
    scores = await asyncio.gather(*(evaluate(model=m, data=data) for m in models))
    best = min(scores)
    print(f"best RMSE {best:.4f} (learning rates 0.01, 0.05, 0.2 -> {', '.join(f'{s:.4f}' for s in scores)})")
    return best


def _print_result(run: Any, pod_runner: str, armada_url: str = "") -> None:
    from armada_flyte.local.journal import print_jobs_table

    outputs = run.outputs()
    best = outputs[0] if isinstance(outputs, tuple) else outputs
    print(f"\npipeline result: best RMSE {float(best):.4f}\n")
    print_jobs_table()
    if armada_url:
        print(
            f"\nArmada at {armada_url} placed every job: its scheduler chose each node from the node groups its "
            "executor reports (arm64 tasks on arm64 nodes); the pods ran natively on this host."
        )
    elif pod_runner == "docker":
        print(f"\nThe docker pod runner ran every pod as a container of {IMAGE} for its node set's platform.")
    elif not os.environ.get("ARMADA_URL"):
        print(
            f"\nThe embedded server's process pod runner ran every pod natively on this {platform.machine()} host; "
            "arm64 pods were scheduled on the arm64 node set (see each job's log, or use "
            "`./scripts/demo.sh --pod-runner docker` to run them in the runtime image under emulation)."
        )


def _wait_for_ctrl_c() -> None:
    import signal
    import threading

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(timeout=0.5):
            pass
    except KeyboardInterrupt:
        pass


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="A multi-architecture Flyte pipeline on Armada.")
    parser.add_argument(
        "--pod-runner",
        "--executor",  # the old spelling, still accepted
        dest="pod_runner",
        choices=("process", "docker"),
        default="process",
        help="how the embedded server runs pods: local processes (default), or containers of "
        "ARMADA_FLYTE_RUNTIME_IMAGE for linux/<node set arch> (needs Docker, and QEMU binfmt for the other arch)",
    )
    parser.add_argument(
        "--view",
        action="store_true",
        help="serve the local view of the run on 127.0.0.1 (the embedded server only), up until Ctrl-C after the run",
    )
    parser.add_argument(
        "--armada-url",
        metavar="HOST:PORT",
        default="",
        help="use this Armada (real Armada on a test bed: ./scripts/demo.sh --real-armada) with a local blob store, "
        "instead of the embedded server; its executor must hold the blob keys' Secret and offer amd64 and arm64 nodes",
    )
    args = parser.parse_args(argv)
    pod_runner = args.pod_runner
    if args.armada_url and (pod_runner != "process" or args.view):
        parser.error("--pod-runner and --view apply to the embedded server, not to --armada-url")
    if args.view and os.environ.get("ARMADA_URL"):
        parser.error("--view shows the embedded server; for another Armada run `armada-flyte view --armada HOST:PORT`")
    if pod_runner == "docker" and "ARMADA_FLYTE_RUNTIME_IMAGE" not in os.environ:
        parser.error(
            "--pod-runner docker runs the tasks in ARMADA_FLYTE_RUNTIME_IMAGE: set it to a multi-arch runtime image "
            "your Docker daemon can pull (docs/admins/runtime-image.md builds one)"
        )
    root = pathlib.Path(__file__).parent
    if os.environ.get("ARMADA_URL") and not args.armada_url:
        flyte.init(root_dir=root, storage=flyte.storage.S3.auto())
        raw_data_path = os.environ.get("ARMADA_FLYTE_RAW_DATA_PATH", "s3://flyte/raw")
        run = flyte.with_runcontext(mode="local", raw_data_path=raw_data_path).run(pipeline)
    else:
        import contextlib

        from armada_flyte.local.stack import local_stack, stack_view

        with local_stack(pod_runner=pod_runner, armada_url=args.armada_url) as stack:
            with stack_view(stack) if args.view else contextlib.nullcontext() as view_url:
                where = "Armada" if args.armada_url else "embedded Armada"
                print(f"{where} at {stack.armada_url}, blob store at {stack.blob_endpoint}")
                if view_url:
                    print(f"view: {view_url}", flush=True)
                stack.init_flyte(root)
                run = flyte.with_runcontext(mode="local", raw_data_path=stack.raw_data_path).run(pipeline)
                if view_url:
                    _print_result(run, pod_runner)
                    print(f"\nview: {view_url} stays up until Ctrl-C", flush=True)
                    _wait_for_ctrl_c()
                    return 0
    _print_result(run, pod_runner, args.armada_url)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
