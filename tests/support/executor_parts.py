"""For the Armada executor's tests: its generated stubs (built once, cached) and leases as the scheduler sends them."""

from __future__ import annotations

import functools
import os
import pathlib
import subprocess
import sys
from typing import Any, Mapping

import pytest

from support.real_parts import UNDER_CI

ROOT = pathlib.Path(__file__).resolve().parents[2]
STUBS_ENV = "ARMADA_FLYTE_EXECUTOR_STUBS"


@functools.lru_cache(maxsize=1)
def _build_stubs() -> tuple[str, str]:
    """(stubs folder, "") once built; ("", why) when they can't be."""
    try:
        result = subprocess.run(
            [str(ROOT / "scripts" / "build-executor-stubs.sh")],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "PYTHON": sys.executable},
        )
    except (FileNotFoundError, subprocess.TimeoutExpired) as exc:
        return "", f"scripts/build-executor-stubs.sh can't run: {exc}"
    if result.returncode != 0:
        return (
            "",
            f"the executor API stubs could not be built (needs Go's module cache or proxy): {result.stderr[-2000:]}",
        )
    return result.stdout.strip().splitlines()[-1], ""


def require_executor_stubs() -> None:
    """Call at the top of a test module, before importing `armada_flyte.executor`: builds the stubs
    (cached) and points the executor at them, or skips the module (fails it under CI)."""
    if os.environ.get(STUBS_ENV):
        return
    folder, why = _build_stubs()
    if not folder:
        if UNDER_CI:
            pytest.fail(f"missing under CI: {why}", pytrace=False)
        pytest.skip(why, allow_module_level=True)
    os.environ[STUBS_ENV] = folder


def lease(
    pod: Any,
    job_id: str = "01job",
    run_id: str = "run-1",
    queue: str = "q",
    job_set: str = "set",
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Any:
    """A JobRunLease as real Armada's scheduler sends it (`pod` None: a lease without a pod spec)."""
    from armada_flyte.executor.stubs import events_pb2, executorapi_pb2

    meta = events_pb2.ObjectMeta(namespace=namespace, labels=labels or {}, annotations=annotations or {})
    job = events_pb2.SubmitJob(job_id=job_id, objectMeta=meta)
    if pod is not None:
        job.mainObject.pod_spec.pod_spec.CopyFrom(pod)
    return executorapi_pb2.JobRunLease(job_run_id=run_id, queue=queue, jobset=job_set, user="alice", job=job)
