"""Tasks that report the machine they ran on, in the runtime image built by scripts/build-runtime-image.sh."""

from __future__ import annotations

import os
import platform

import flyte

from armada_flyte import ArmadaConfig

IMAGE = os.environ.get("ARMADA_FLYTE_TEST_RUNTIME_IMAGE", "127.0.0.1:5055/armada-flyte-runtime:unset")
"""The same image reference for both architectures: one multi-platform image index."""
SMALL = flyte.Resources(cpu="500m", memory="512Mi")

on_amd64 = flyte.TaskEnvironment(
    "machine-amd64", image=IMAGE, resources=SMALL, plugin_config=ArmadaConfig(architecture="amd64")
)
on_arm64 = flyte.TaskEnvironment(
    "machine-arm64", image=IMAGE, resources=SMALL, plugin_config=ArmadaConfig(architecture="arm64")
)


def _where() -> str:
    return f"{platform.machine()} uid={os.getuid()}"


@on_amd64.task
async def machine_on_amd64() -> str:
    return _where()


@on_arm64.task
async def machine_on_arm64() -> str:
    return _where()
