"""Helpers for doctor tests: write configs to files and run the real CLI on them."""

from __future__ import annotations

import json
import pathlib
from typing import Any, Callable, Iterator

import pytest
import yaml

from armada_flyte.admin.cli import main


@pytest.fixture
def good_executor() -> dict[str, Any]:
    """An executor config that tracks the arch label and tolerates the arch taint, and the GPU and spot
    labels and taints the presets' accelerators and interruptible classes use."""
    return {
        "kubernetes": {
            "trackedNodeLabels": ["kubernetes.io/hostname", "kubernetes.io/arch", *PRESET_GPU_LABELS],
            "toleratedTaints": ["kubernetes.io/arch", *PRESET_GPU_AND_SPOT_TAINTS],
        }
    }


PRESET_GPU_LABELS = (
    "cloud.google.com/gke-accelerator",
    "cloud.google.com/gke-gpu-partition-size",
    "karpenter.k8s.aws/instance-gpu-name",
    "karpenter.k8s.aws/instance-gpu-memory",
    "node.kubernetes.io/instance-type",
)
PRESET_GPU_AND_SPOT_TAINTS = ("nvidia.com/gpu", "sku", "kubernetes.azure.com/scalesetpriority")


@pytest.fixture
def good_scheduler() -> dict[str, Any]:
    """A scheduler config that indexes the arch label."""
    return {"scheduling": {"indexedNodeLabels": ["kubernetes.io/hostname", "kubernetes.io/arch"]}}


@pytest.fixture
def write_yaml(tmp_path: pathlib.Path) -> Callable[[str, Any], pathlib.Path]:
    """Write `data` as YAML (or a string as-is) to a file named `name`; returns its path."""

    def write(name: str, data: Any) -> pathlib.Path:
        path = tmp_path / name
        path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
        return path

    return write


@pytest.fixture
def doctor(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str]]:
    """Run `armada-flyte doctor ARGS`; returns (exit code, stdout)."""

    def run(*args: str) -> tuple[int, str]:
        code = main(["doctor", *args])
        return code, capsys.readouterr().out

    return run


@pytest.fixture
def doctor_json(doctor: Callable[..., tuple[int, str]]) -> Callable[..., tuple[int, dict[str, Any]]]:
    """Run `armada-flyte doctor ARGS --json`; returns (exit code, parsed report)."""

    def run(*args: str) -> tuple[int, dict[str, Any]]:
        code, out = doctor(*args, "--json")
        return code, json.loads(out)

    return run


@pytest.fixture(autouse=True)
def _no_connector_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The doctor reads connector settings from the environment: start each test from none (the tests' own
    ARMADA_FLYTE_TEST_* names stay: they name real parts, such as the image builder)."""
    import os

    for name in list(os.environ):
        if name.startswith("ARMADA_FLYTE_TEST_"):
            continue
        if name.startswith("ARMADA_FLYTE_") or name in (
            "ARMADA_URL",
            "FLYTE_BLOB_ENDPOINT",
            "FLYTE_BLOB_ACCESS_KEY",
            "FLYTE_BLOB_SECRET_KEY",
        ):
            monkeypatch.delenv(name)


@pytest.fixture
def closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def auth_armada() -> Iterator[str]:
    """An Armada API on 127.0.0.1 that requires credentials (see doctor_auth_armada); queue `flyte` exists."""
    from support.doctor_auth_armada import serve

    yield from serve({"flyte"})


@pytest.fixture
def auth_armada_without_queue_service() -> Iterator[str]:
    """The same, serving GetQueue only on the Submit service, as some servers do."""
    from support.doctor_auth_armada import serve

    yield from serve({"flyte"}, queue_service=False)
