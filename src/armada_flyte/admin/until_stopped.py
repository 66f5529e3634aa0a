"""Running a long-lived loop (an executor, a node agent) until Ctrl-C or SIGTERM, for the console script."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from typing import Protocol


class Stoppable(Protocol):
    def run(self) -> None: ...

    def stop(self) -> None: ...


def run_until_stopped(loop: Stoppable, name: str) -> int:
    """`loop.run()` on a thread of its own until it returns, or Ctrl-C or SIGTERM call `loop.stop()`; the exit
    status (1 when the loop failed of its own accord: a failure it retries is not one)."""
    failures: list[Exception] = []

    def serve() -> None:
        try:
            loop.run()
        except Exception as exc:
            logging.getLogger(__name__).exception("the %s failed", name)
            failures.append(exc)

    thread = threading.Thread(target=serve, name=name)
    previous = signal.signal(signal.SIGTERM, lambda *_: loop.stop())
    thread.start()
    try:
        while thread.is_alive():
            thread.join(timeout=0.5)
    except KeyboardInterrupt:
        loop.stop()
        thread.join()
    finally:
        signal.signal(signal.SIGTERM, previous)
    if failures:
        print(f"armada-flyte: the {name} failed: {failures[0]}", file=sys.stderr)
        return 1
    print("stopped", flush=True)
    return 0
