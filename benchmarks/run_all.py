"""Run every benchmark, one after the other, and print their JSON together with the total time.

Run: .venv/bin/python benchmarks/run_all.py   (target: under 5 minutes on the 2-core machine)
`--armada real` runs the connector benchmarks against the real bed in ARMADA_URL (started with its
executor: `eval "$(scripts/real-armada.sh up)"`); the embedded server's own benchmarks run as always.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from armada_under_test import add_armada_option  # noqa: E402

HERE = pathlib.Path(__file__).parent
CONNECTOR_SCRIPTS = ("bench_connector_scale.py", "bench_task_through_c0.py")
"""The ones that take `--armada`."""
SCRIPTS = {
    "bench_connector_scale.py": [],
    "bench_task_through_c0.py": ["--runs", "5"],
    "bench_embedded_backlog.py": [],
    "bench_embedded_server.py": [],
    "bench_trivial_task.py": ["--runs", "5"],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_armada_option(parser)
    args = parser.parse_args()
    results: dict[str, object] = {}
    began = time.perf_counter()
    for script, extra in SCRIPTS.items():
        started = time.perf_counter()
        if script in CONNECTOR_SCRIPTS:
            extra = [*extra, "--armada", args.armada]
        done = subprocess.run([sys.executable, str(HERE / script), *extra], capture_output=True, text=True)
        output = done.stdout[done.stdout.find("{") :] if "{" in done.stdout else ""
        try:
            results[script] = json.loads(output)
        except json.JSONDecodeError:
            results[script] = {"error": (done.stderr or done.stdout)[-2000:]}
        results[script + " seconds"] = round(time.perf_counter() - started, 1)
    results["total_seconds"] = round(time.perf_counter() - began, 1)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
