"""Executors run leased pods: as local processes (`process`) or as Docker containers (`docker`)."""

from __future__ import annotations

from armada_flyte.embedded.executors.base import Executor, PodLaunch, RunReporter
from armada_flyte.errors import InvalidConfig

EXECUTOR_KINDS = ("process", "docker")


def make_executor(kind: str, **options: object) -> Executor:
    """The executor called `kind`; options go to its constructor."""
    if kind == "process":
        from armada_flyte.embedded.executors.process import ProcessExecutor

        return ProcessExecutor(**options)  # type: ignore[arg-type]
    if kind == "docker":
        from armada_flyte.embedded.executors.docker import DockerExecutor

        return DockerExecutor(**options)  # type: ignore[arg-type]
    raise InvalidConfig("executor", kind, f"use one of {', '.join(EXECUTOR_KINDS)}")


__all__ = ["EXECUTOR_KINDS", "Executor", "PodLaunch", "RunReporter", "make_executor"]
