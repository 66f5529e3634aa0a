"""The embedded Armada server (paused, queue `flyte`) in a process of its own, for benchmarks whose
client would otherwise share its GIL. Its call counts are read where the calls arrive, in its process.

As a script: prints its URL, then answers each line on stdin with its call counts as one JSON line;
stops at the end of stdin.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from typing import Callable, Iterator

import armada_flyte  # noqa: F401  (aliases armada_client's google.api protos first)
from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig


@contextlib.contextmanager
def armada_process() -> Iterator[tuple[str, Callable[[], dict[str, int]]]]:
    """Yields the server's URL and a function returning its calls so far, by method name."""
    process = subprocess.Popen(
        [sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
    )
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout

    def counts() -> dict[str, int]:
        stdin.write("counts\n")
        stdin.flush()
        return json.loads(stdout.readline())

    try:
        url = stdout.readline().strip()
        if not url:
            raise RuntimeError(f"the embedded Armada server did not start (exit code {process.wait(timeout=30)})")
        yield url, counts
    finally:
        stdin.close()
        process.wait(timeout=60)


def serve() -> None:
    with EmbeddedArmada(EmbeddedConfig(port=0, queues=("flyte",), paused=True)) as armada:
        print(armada.url, flush=True)
        for _ in sys.stdin:
            print(json.dumps(armada.calls.counts()), flush=True)


if __name__ == "__main__":
    serve()
