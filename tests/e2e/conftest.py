"""A real Flyte local run through the connector: Armada, moto S3, real a0 processes.

The Armada is the embedded server, or with `--armada real` real Armada on a bed
(`support.real_armada`) whose executor (ours) runs the a0 pods and holds the blob keys and task
secrets (`bed_secrets`). Tests that look behind Armada's API (`stack.server`) are marked
`embedded_only` and skip there.
"""

from __future__ import annotations

import pathlib
import sys
from typing import Callable

import pytest

from support.real_armada import bed_log_tails, ensure_queues, uses_real_armada

PROJECT = pathlib.Path(__file__).parent / "project"


@pytest.fixture(scope="module")
def stack(request: pytest.FixtureRequest):
    """The local stack: its own embedded server, or (`--armada real`) the session's real Armada."""
    from armada_flyte.local.stack import local_stack

    armada_url = ""
    if uses_real_armada(request.config):
        armada_url = request.getfixturevalue("real_armada")["ARMADA_URL"]
        ensure_queues(armada_url, ("flyte",))
    with local_stack(configure_connector=False, armada_url=armada_url) as endpoints:
        yield endpoints


@pytest.fixture
def armada_logs(request: pytest.FixtureRequest) -> Callable[[], str]:
    """The bed's component logs on real Armada ("" on the embedded server), for failure messages."""
    if not uses_real_armada(request.config):
        return lambda: ""
    bed = request.getfixturevalue("real_armada")
    return lambda: bed_log_tails(bed)


@pytest.fixture
def flyte_run(stack):
    """Configure the connector and Flyte for this test; returns a runner for tasks of the project."""
    import flyte

    from armada_flyte import configure
    from armada_flyte.local import journal

    configure(**stack.connector_settings())
    journal.clear()
    sys.path.insert(0, str(PROJECT))
    stack.init_flyte(PROJECT)

    def _run(task, **inputs):
        return flyte.with_runcontext(mode="local", raw_data_path=stack.raw_data_path).run(task, **inputs)

    yield _run
    sys.path.remove(str(PROJECT))


@pytest.fixture
def c0(stack, tmp_path):
    """A real `c0` where a Flyte backend would call it, pointed at the local stack (blob keys by Secret)."""
    from support.c0_service import c0_env, running_c0

    with running_c0(c0_env(stack.armada_url, stack.blob_endpoint), tmp_path / "c0.log") as stub:
        yield stub
