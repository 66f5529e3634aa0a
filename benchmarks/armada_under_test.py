"""`--armada {embedded,real}` for the connector benchmarks: an Armada URL with a call counter in front of it.

Both servers are reached through the counting proxy (`counting_proxy.py`), so calls are counted the same
way, where they arrive, and the raw `armada_client` floors take the same path as the connector. The
embedded server is started here; real Armada is the bed already up in the shell (`ARMADA_URL`, from
`eval "$(scripts/real-armada.sh up)"`, with an executor: without one, Armada's submit check rejects every job).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import pathlib
import queue
import re
import subprocess
import sys
import threading
import time
from typing import IO, Iterator

from counting_proxy import CountingProxy, counting_proxy

import armada_flyte  # noqa: F401  (aliases armada_client's google.api protos first)
from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
from support.armada_channels import armada_channel  # noqa: E402  (the tests' channel with the bed's credentials)

__all__ = ["ArmadaUnderTest", "add_armada_option", "armada_channel", "armada_under_test", "load_average"]

KINDS = ("embedded", "real")


def add_armada_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--armada",
        choices=KINDS,
        default="embedded",
        help="the embedded server (started here) or real Armada (the bed in ARMADA_URL, scripts/real-armada.sh up)",
    )


@dataclasses.dataclass(frozen=True)
class ArmadaUnderTest:
    """Where the benchmark's Armada answers (the proxy), which one it is, and what reached it."""

    kind: str
    url: str
    proxy: CountingProxy
    server_pid: int = 0
    """The embedded server's own process (`own_process`), else 0."""

    def counts(self) -> dict[str, int]:
        return self.proxy.counts()


def load_average() -> list[float]:
    """The machine's 1, 5 and 15 minute load averages, printed beside every figure: it is shared."""
    return [round(x, 2) for x in os.getloadavg()]


@contextlib.contextmanager
def armada_under_test(kind: str, paused: bool = True, own_process: bool = False) -> Iterator[ArmadaUnderTest]:
    """The embedded server (`paused`: nothing runs) or the real bed, behind a counting proxy. `own_process`: the
    embedded server runs as users start it for a c0, `armada-flyte dev` in a process of its own, rather than in
    the benchmark's (where it would share the GIL with the benchmark's client)."""
    with contextlib.ExitStack() as stack:
        server_pid = 0
        if kind == "embedded" and own_process:
            upstream, server_pid = stack.enter_context(dev_process(paused))
        elif kind == "embedded":
            upstream = stack.enter_context(EmbeddedArmada(EmbeddedConfig(port=0, queues=("flyte",), paused=paused))).url
        elif os.environ.get("ARMADA_URL"):
            upstream = os.environ["ARMADA_URL"]
        else:
            raise SystemExit('--armada real needs a bed in ARMADA_URL: eval "$(scripts/real-armada.sh up)"')
        proxy = stack.enter_context(counting_proxy(upstream))
        yield ArmadaUnderTest(kind, proxy.address, proxy, server_pid)


@contextlib.contextmanager
def dev_process(paused: bool, ready_within: float = 120.0) -> Iterator[tuple[str, int]]:
    """`armada-flyte dev` (in memory, no blob store, no view) in a process of its own: its URL and pid once it
    listens. Its first line says where; a server that exits, or says nothing for `ready_within` seconds, fails the
    benchmark with its output. Its output is read on a thread of its own from the start, so the deadline holds
    while it is silent and a full pipe never stops it later."""
    command = [str(pathlib.Path(sys.executable).parent / "armada-flyte"), "dev", "--port", "0", "--ephemeral"]
    command += ["--no-blob-store", "--no-view", "--queue", "flyte", *(["--paused"] if paused else [])]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str] = queue.Queue()
    listening = threading.Event()
    threading.Thread(target=_read_lines, args=(process.stdout, lines, listening), daemon=True).start()
    said: list[str] = []
    try:
        deadline = time.monotonic() + ready_within
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                break
            if not line:  # it exited
                break
            said.append(line)
            if found := re.search(r"listening on (127\.0\.0\.1:\d+)", line):
                listening.set()
                yield found.group(1), process.pid
                return
        raise RuntimeError(
            f"armada-flyte dev did not say where it listens within {ready_within:.0f} s "
            f"(exit code {process.poll()}): {''.join(said)}"
        )
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()


def _read_lines(stream: IO[str], lines: queue.Queue[str], listening: threading.Event) -> None:
    """Every line `stream` gives, then "" at its end; once it said it is `listening`, its lines are dropped."""
    for line in stream:
        if not listening.is_set():
            lines.put(line)
    lines.put("")
