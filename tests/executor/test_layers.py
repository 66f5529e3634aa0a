"""Only the lease loop talks to the scheduler (the layers themselves: import-linter's contracts in pyproject.toml)."""

from __future__ import annotations

import pytest

from support.import_graph import MODULES, imports

pytestmark = pytest.mark.pure


def test_only_the_lease_loop_talks_grpc():
    talkers = {
        name.rsplit(".", 1)[1]
        for name, path in MODULES.items()
        if name.startswith("armada_flyte.executor.") and any(t.split(".")[0] == "grpc" for t, _ in imports(path))
    }
    assert talkers == {"lease_loop"}
