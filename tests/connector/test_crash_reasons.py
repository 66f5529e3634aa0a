"""Wrong-architecture crashes: recognised in Armada's reason or a0's error, said as the missing image variant."""

from __future__ import annotations

import struct

import pytest
from flyteidl2.core.execution_pb2 import TaskExecution

import armada_flyte
from armada_flyte import ArmadaConfig
from armada_flyte.connector.poll.crash_reasons import BUILD_BOTH, wrong_architecture

from support.armada_templates import python_template, run, wait_for

REASON = "container main failed with exit code 1 because Error: exec /bin/x: exec format error\n"
"""The shape of Armada's failure reason (internal/executor/util/pod_status.go: "... because REASON: MESSAGE")."""


@pytest.mark.pure
@pytest.mark.parametrize(
    "crash",
    [
        "exec /bin/x: exec format error",
        "OSError: [Errno 8] Exec format error: './tool'",
        "ImportError: /venv/lib/_native.so: wrong ELF class: ELFCLASS64",
        "ImportError: /venv/lib/_native.so: wrong ELF class: ELFCLASS32",
        "ImportError: /venv/lib/_native.so: ELF file's phentsize not the expected size",
        "ImportError: /venv/lib/_native.so: invalid ELF header",
    ],
)
def test_each_foreign_architecture_crash_is_recognised_with_its_line(crash: str) -> None:
    found = wrong_architecture(f"Traceback (most recent call last):\n  ...\n{crash}\n", "reg/app:1", "arm64")
    assert found is not None
    assert found.evidence == crash
    assert found.says() == "image reg/app:1 has no linux/arm64 variant"
    assert BUILD_BOTH in found.fix() and "pin the task to an architecture the image has" in found.fix()


@pytest.mark.pure
@pytest.mark.parametrize(
    "other",
    [
        "ImportError: libfoo.so.1: cannot open shared object file: No such file or directory",
        "container main failed with exit code 1 because Error: disk full",
        "",
    ],
)
def test_other_crashes_are_not_taken_for_a_wrong_architecture(other: str) -> None:
    assert wrong_architecture(other, "reg/app:1", "arm64") is None


@pytest.mark.pure
def test_an_unknown_architecture_is_not_guessed() -> None:
    found = wrong_architecture(REASON, "reg/app:1", "")
    assert (
        found is not None
        and found.says() == "image reg/app:1 has no variant for the architecture of the node it ran on"
    )


def _elf32_header() -> bytes:
    """An ELF header of class 32 for i386: a 64-bit loader refuses it with "wrong ELF class: ELFCLASS32"."""
    return struct.pack("<4s5B7xHHIIIIIHHHHHH", b"\x7fELF", 1, 1, 1, 0, 0, 3, 3, 1, 0, 52, 0, 0, 52, 32, 0, 40, 0, 0)


LOAD_FOREIGN_LIBRARY = f"""
import ctypes
with open("foreign.so", "wb") as library:
    library.write({_elf32_header()!r}.ljust(4096, b"\\0"))
ctypes.CDLL("./foreign.so")
"""
"""A task that loads a native library of another class, as a wheel for another CPU would be loaded."""


def test_a_foreign_library_crash_under_the_embedded_server_reads_as_the_missing_variant(armada) -> None:
    from armada_flyte.connector.service import ArmadaConnector

    armada_flyte.configure(armada_url=armada.url, node_groups_preset="embedded", ack_timeout_seconds=30)
    connector = ArmadaConnector()
    template = python_template(LOAD_FOREIGN_LIBRARY, ArmadaConfig(architecture="amd64"))
    meta = run(connector.submit(template, "s3://flyte/raw/foreign-lib/a0/0"))
    resource = run(wait_for(connector, meta, {TaskExecution.FAILED, TaskExecution.RETRYABLE_FAILED}))
    assert resource.phase == TaskExecution.FAILED
    assert resource.message.startswith(f"image {template.container.image} has no linux/amd64 variant: Armada job ")
    assert "wrong ELF class: ELFCLASS32" in resource.message
    assert f"\nTo fix: {resource.custom_info['fix']}" in resource.message
    assert BUILD_BOTH in resource.custom_info["fix"]
    assert resource.custom_info["wrong_architecture"]["image"] == template.container.image
    assert resource.custom_info["wrong_architecture"]["architecture"] == "amd64"


def test_c0_gettask_carries_the_missing_variant_and_its_fix_to_the_backend(c0) -> None:
    from flyteidl2.connector import connector_pb2

    from support.armada_templates import execution_metadata
    from support.c0_service import poll_until_done

    template = python_template(LOAD_FOREIGN_LIBRARY, ArmadaConfig(architecture="amd64"))
    request = connector_pb2.CreateTaskRequest(
        template=template,
        output_prefix="s3://flyte/raw/foreign-lib-c0/a1/0",
        task_execution_metadata=execution_metadata(run="foreign-lib-c0", action="a1", attempt=0),
    )
    resource = poll_until_done(c0, c0.CreateTask(request, timeout=60).resource_meta)
    assert resource.phase == TaskExecution.FAILED
    assert resource.message.startswith(f"image {template.container.image} has no linux/amd64 variant: ")
    assert BUILD_BOTH in resource.custom_info["fix"]
    assert "wrong ELF class: ELFCLASS32" in resource.custom_info["wrong_architecture"]["evidence"]
