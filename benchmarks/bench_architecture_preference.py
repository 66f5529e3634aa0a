"""40 one-CPU tasks preferring arm64 on a cluster whose arm64 group has room for 8: makespan, and the share
that ran on arm64, against the same tasks pinned to arm64 and with `any`, in the same run.

Every round goes through the connector (create, then get until done) into the embedded server's default
cluster or, with `--armada real`, the real-Armada bed in ARMADA_URL (the same cluster: two amd64 and two
arm64 nodes of 4 CPUs, pods as local processes). Each task sleeps `--sleep` seconds, so pinned tasks run
8 at a time; a preference runs 8 on arm64 and moves the ones that waited `--spill-after` seconds for room
to amd64 (one round per value: a wait longer than a task keeps more tasks on arm64). Prints JSON.

    .venv/bin/python benchmarks/bench_architecture_preference.py [--armada real] [--tasks 40] [--sleep 10]
        [--spill-after 15 25]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import logging
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from armada_under_test import add_armada_option, armada_under_test, load_average  # noqa: E402
from bench_any_architecture import sleep_template, wait_done  # noqa: E402

import armada_flyte  # noqa: E402

ARM_SLOTS = 8
"""One-CPU tasks the arm64 group runs at once (two nodes of 4 CPUs); amd64 has as many."""
REPORT_REFRESH_SECONDS = 2.0
"""How often a waiting job's scheduling report is read again (the connector's default is 30 s; a report
read in a job's first second may predate every scheduling round, which would hold a spill back 30 s)."""


async def one_round(connector, architecture: str, tasks: int, seconds: float, spill_after: float) -> dict:
    """Create `tasks` tasks at once and poll each until done; the makespan is first create to last end."""
    started = time.perf_counter()
    metas = [
        await connector.create(
            sleep_template(seconds, architecture, i, spill_after or None),
            f"s3://b/raw/bench-{architecture}-{spill_after:g}/{i}",  # a client id per round: no dedup across
        )
        for i in range(tasks)
    ]
    ends = await asyncio.gather(*(wait_done(connector, meta) for meta in metas))
    landed = collections.Counter(info.get("architecture") or "?" for _, info in ends)
    spilled = sum(1 for _, info in ends if info.get("spilled_from"))
    finished: dict[str, list[float]] = collections.defaultdict(list)
    for end, info in ends:
        finished[info.get("architecture") or "?"].append(round(end - started, 1))
    return {
        "architecture": architecture,
        "tasks": tasks,
        "makespan_s": round(max(end for end, _ in ends) - started, 2),
        "ran_on": dict(sorted(landed.items())),
        "share_on_arm64": round(landed.get("arm64", 0) / tasks, 2),
        "spilled": spilled,
        "ended_s_by_architecture": {
            arch: [min(t), statistics.median(t), max(t)] for arch, t in sorted(finished.items())
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_armada_option(parser)
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--sleep", type=float, default=10.0)
    parser.add_argument("--spill-after", type=float, nargs="+", default=[15.0, 25.0])
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    from armada_flyte.connector.service import ArmadaConnector

    load_before = load_average()
    with armada_under_test(args.armada, paused=False) as armada:
        armada_flyte.configure(
            armada_url=armada.url, node_groups_preset="embedded", queued_report_refresh_seconds=REPORT_REFRESH_SECONDS
        )
        connector = ArmadaConnector()
        rounds = {
            "pinned_arm64": asyncio.run(one_round(connector, "arm64", args.tasks, args.sleep, 0)),
            "any": asyncio.run(one_round(connector, "any", args.tasks, args.sleep, 0)),
        }
        for wait in args.spill_after:
            name = f"prefer_arm64_spill_after_{wait:g}s"
            rounds[name] = asyncio.run(one_round(connector, "arm64,amd64", args.tasks, args.sleep, wait))
        asyncio.run(connector.close())
        calls = armada.counts()
    pinned, anywhere = rounds["pinned_arm64"], rounds["any"]
    preferred = {name: r for name, r in rounds.items() if name.startswith("prefer")}
    result = {
        "benchmark": f"{args.tasks} tasks of 1 CPU sleeping {args.sleep:g} s preferring arm64, against pinned "
        "arm64 and any",
        "armada": args.armada,
        "cluster": "2 amd64 + 2 arm64 nodes of 4 CPUs (arm64 has room for 8 at once)",
        **rounds,
        "makespan_vs_pinned": {n: round(r["makespan_s"] / pinned["makespan_s"], 2) for n, r in preferred.items()},
        "makespan_vs_any": {n: round(r["makespan_s"] / anywhere["makespan_s"], 2) for n, r in preferred.items()},
        "ideal_waves": {"pinned_arm64": -(-args.tasks // ARM_SLOTS), "any": -(-args.tasks // (2 * ARM_SLOTS))},
        "cancel_job_set_calls": calls.get("CancelJobSet", 0),
        "load_average": [load_before, load_average()],
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
