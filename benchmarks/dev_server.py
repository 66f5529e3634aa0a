"""`armada-flyte dev` as users run it, plus a probe of the cyclic GC's pauses, for benchmarks.

Run: python benchmarks/dev_server.py GC_PAUSES_FILE dev [dev's options]
On exit it writes to GC_PAUSES_FILE the longest collection pause (ms), per generation too, and their count.
"""

from __future__ import annotations

import gc
import json
import pathlib
import sys
import time

from armada_flyte.admin.cli import main


class GcPauses:
    """The duration of every cyclic collection while installed."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self.longest_by_generation = [0.0, 0.0, 0.0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            pause = (time.perf_counter() - self._started) * 1000
            self.pauses.append(pause)
            generation = info["generation"]
            self.longest_by_generation[generation] = max(self.longest_by_generation[generation], round(pause, 1))


if __name__ == "__main__":
    report, argv = pathlib.Path(sys.argv[1]), sys.argv[2:]
    pauses = GcPauses()
    gc.callbacks.append(pauses)
    try:
        code = main(argv)
    finally:
        gc.callbacks.remove(pauses)
        longest = round(max(pauses.pauses, default=0.0), 1)
        report.write_text(
            json.dumps(
                {
                    "longest_ms": longest,
                    "collections": len(pauses.pauses),
                    "by_generation": pauses.longest_by_generation,
                }
            )
        )
    sys.exit(code)
