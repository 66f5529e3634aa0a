"""Run one of benchmarks/ as its users do (its own process), for the tests that check a benchmark end to end."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


def run_benchmark(script: str, *args: str, timeout: float = 240) -> dict[str, Any]:
    """The JSON object `script` printed; fails the test with its output when it exits non-zero."""
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)
