"""Run every benchmark, one after the other, and print their JSON together with the total time.

Run: .venv/bin/python benchmarks/run_all.py   (target: under 5 minutes on the 2-core machine)
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).parent
SCRIPTS = {
    "bench_connector_scale.py": [],
    "bench_embedded_backlog.py": [],
    "bench_embedded_server.py": [],
    "bench_trivial_task.py": ["--runs", "5"],
}


def main() -> int:
    results: dict[str, object] = {}
    began = time.perf_counter()
    for script, extra in SCRIPTS.items():
        started = time.perf_counter()
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
