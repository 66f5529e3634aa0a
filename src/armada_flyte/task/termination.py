"""SIGTERM ends a process that defines Armada tasks the way Ctrl-C does: through the interpreter's exit.

Python's default for SIGTERM kills the process on the spot, so exit hooks never run; a laptop run
stopped that way (`kill`, `timeout`, a CI job cancelled) would leave its Armada jobs running,
because the hook that cancels them (`armada_flyte.local.inflight`) runs at exit. The handler turns
the signal into `SystemExit(143)` (128 + SIGTERM, the status a kill would give) in the main thread.
It is installed only from the main thread and only over the default disposition, so a program (or
a server such as c0) with a SIGTERM handler of its own keeps it; a second SIGTERM kills at once.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

EXIT_STATUS = 128 + signal.SIGTERM


def exit_cleanly_on_sigterm() -> bool:
    """Install the handler when SIGTERM still has Python's default and this is the main thread; True if installed."""
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return False
    signal.signal(signal.SIGTERM, _exit)
    return True


def _exit(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise SystemExit(EXIT_STATUS)
