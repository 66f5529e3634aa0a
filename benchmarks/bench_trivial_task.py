"""Median wall time of a trivial task through the whole local path, next to the stock mixin's.

Both go through the same connector, embedded Armada server, S3 blob store and real a0 process;
only the waiting differs (ours: the job's events through the status view, and a code bundle
cached by content; stock: fixed 3 s sleeps plus one after the end). Prints JSON. Target: ours
at most 0.70 s median (a0 alone takes about 0.58 s here). Each path's task is in a module of its
own (`trivial_task/ours.py`, `trivial_task/stock.py`), since the pod loads the task's module:
ours imports only the authoring surface, as a user's module does; the stock one also needs the
connector service in its pod.

The floor, in the same run, alternating with ours: the pod our last run launched (its a0 command,
environment and secrets), given again to the same pod runner alone, with no Armada, connector or
Flyte client around it (`pod_alone.py`). Target: ours at most 1.15x a0 alone (medians).

    .venv/bin/python benchmarks/bench_trivial_task.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import logging
import pathlib
import statistics
import sys
import time

import flyte

from armada_flyte.local.stack import local_stack

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from armada_under_test import load_average  # noqa: E402
from pod_alone import LaunchRecorder, run_alone  # noqa: E402

PROJECT = pathlib.Path(__file__).parent / "trivial_task"
TARGET_S = 0.70
TARGET_VS_A0_ALONE = 1.15


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    sys.path.insert(0, str(PROJECT))
    import ours
    import stock

    with local_stack() as stack:
        stack.init_flyte(PROJECT)
        plane = stack.server.plane
        recorder = plane.pod_runner = LaunchRecorder(plane.pod_runner)
        runner = flyte.with_runcontext(mode="local", raw_data_path=stack.raw_data_path)

        def timed(task) -> float:
            started = time.perf_counter()
            run = runner.run(task, x=41)
            elapsed = time.perf_counter() - started
            outputs = run.outputs()
            assert (outputs[0] if isinstance(outputs, tuple) else outputs) == 42
            return elapsed

        timed(ours.add_one_ours)  # warm-up: imports, first bundle upload
        ours_s, alone_s = [], []
        for _ in range(args.runs):
            ours_s.append(timed(ours.add_one_ours))
            assert recorder.last is not None
            alone_s.append(run_alone(recorder.runner, recorder.last))
        stock_s = [timed(stock.add_one_stock) for _ in range(args.runs)]

    vs_alone = statistics.median(ours_s) / statistics.median(alone_s)
    result = {
        "benchmark": "trivial task, local run through the embedded Armada server",
        "load_average": load_average(),
        "runs": args.runs,
        "armada_flyte_median_s": round(statistics.median(ours_s), 3),
        "a0_alone_median_s": round(statistics.median(alone_s), 3),
        "armada_flyte_vs_a0_alone": round(vs_alone, 2),
        "stock_mixin_median_s": round(statistics.median(stock_s), 3),
        "armada_flyte_s": [round(t, 3) for t in ours_s],
        "a0_alone_s": [round(t, 3) for t in alone_s],
        "stock_mixin_s": [round(t, 3) for t in stock_s],
        "target_median_s": TARGET_S,
        "target_vs_a0_alone": TARGET_VS_A0_ALONE,
        "meets_target": statistics.median(ours_s) <= TARGET_S,
        "meets_target_vs_a0_alone": vs_alone <= TARGET_VS_A0_ALONE,
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
