"""`armada-flyte dev` from another machine: nothing it serves is reachable.

Every server of the embedded stack (Armada's gRPC API, the blob store, the view, the Kubernetes API,
the ingress) binds 127.0.0.1; this machine's non-loopback address stands in for another machine
(`support.exposure`). docs/security.md lists the servers.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from support.exposure import accepts_connections, descendants, listeners, non_loopback_address
from support.process_output import Output

pytestmark = pytest.mark.embedded_only

DEV = [sys.executable, "-m", "armada_flyte.admin.cli", "dev", "--ephemeral", "--port", "0"]


def test_every_server_of_dev_listens_on_loopback_only_and_another_machine_is_refused() -> None:
    remote = non_loopback_address()
    process = subprocess.Popen(DEV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = Output(process)
    try:
        output.wait_for(r"Press Ctrl-C to stop")
        served = listeners(descendants(process.pid))
        # Armada's gRPC API, the blob store, the view, the Kubernetes API and the ingress at least.
        assert len({listener.port for listener in served}) >= 5, served
        assert [listener for listener in served if not listener.loopback_only] == []
        assert [listener.port for listener in served if accepts_connections(remote, listener.port)] == []
    finally:
        process.terminate()
        process.wait(timeout=60)
