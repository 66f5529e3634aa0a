"""A fixed port some outside test insists on (Armada's e2e armadactl tests dial localhost:50051), taken in turn.

Two runs of the suite on one machine (two checkouts, or CI beside a developer) would both serve that port;
instead each waits, bounded, on a lock of the user's for it, and serves it only while holding the lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pathlib
import time
from typing import Iterator

from support.waiting import wait_until

LOCKS = pathlib.Path(os.environ.get("ARMADA_FLYTE_CACHE", pathlib.Path.home() / ".cache/armada-flyte")) / "port-locks"


@contextlib.contextmanager
def holding_port(port: int, timeout: float) -> Iterator[None]:
    """Hold the lock of `port` for the block, waiting up to `timeout` seconds for another run to let it go."""
    LOCKS.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor = os.open(LOCKS / f"{port}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:

        def taken() -> bool:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            return True

        started = time.monotonic()
        wait_until(taken, timeout, f"another run of the tests to let go of port {port} ({LOCKS / f'{port}.lock'})")
        if time.monotonic() - started > 1:
            print(f"waited {time.monotonic() - started:.0f} s for port {port}, held by another run")
        yield
    finally:
        os.close(descriptor)  # closing lets the lock go
