"""error.pb is the task's to write, so its size and bytes are too: the connector reads at most its cap + 1
bytes, and a larger or unparseable file fails the task at once, saying so, as a non-recoverable SYSTEM
error with a code of its own; the shared c0 is unharmed (its memory, other tasks' polls).

Real parts: the embedded Armada server running real pod processes, moto's S3 server, and `c0` as a
process (its memory read from /proc); local runs' reads (Flyte's storage) on local files.
"""

from __future__ import annotations

import asyncio
import pathlib
import threading
import time

import pytest
from flyteidl2.connector import connector_pb2
from flyteidl2.core import execution_pb2
from flyteidl2.core.execution_pb2 import TaskExecution

from armada_flyte.connector.poll import error_file
from armada_flyte.connector.poll.error_file import MAX_ERROR_FILE_BYTES, read_task_error
from armada_flyte.local.stack import LocalBlobServer

from support.armada_templates import execution_metadata, python_template
from support.c0_service import ARMADA_TASKS, TERMINAL, c0_env, c0_process

BIG = 200 * 1024 * 1024
"""The done-when's error.pb: 200 MB."""
MEMORY_GROWTH_ALLOWED = 20 * 1024 * 1024

WAIT_THEN_EXIT_0 = """
import os, sys, time
go = sys.argv[sys.argv.index("--go") + 1]
while not os.path.exists(go):
    time.sleep(0.05)
"""


def _value_error() -> bytes:
    document = execution_pb2.ErrorDocument()
    document.error.code, document.error.message = "ValueError", "bad input"
    document.error.origin = execution_pb2.ExecutionError.USER
    return document.SerializeToString()


def _read_local(outputs: pathlib.Path):
    return asyncio.run(read_task_error(str(outputs), timeout=30))


@pytest.mark.pure
def test_local_runs_read_an_error_file_over_the_cap_as_the_tasks_failure_not_whole(tmp_path, monkeypatch):
    (tmp_path / "error.pb").write_bytes(b"\x0a" * (MAX_ERROR_FILE_BYTES + 10))
    error = _read_local(tmp_path)
    assert error is not None and error.code == "ErrorFileTooLarge"
    assert error.kind == "system" and not error.recoverable
    assert f"over the {MAX_ERROR_FILE_BYTES}-byte cap" in error.message and "error.pb" in error.message

    monkeypatch.setattr(error_file, "MAX_ERROR_FILE_BYTES", 64)  # a file of 65 bytes: one byte over
    (tmp_path / "error.pb").write_bytes(b"x" * 65)
    assert _read_local(tmp_path).code == "ErrorFileTooLarge"


@pytest.mark.pure
def test_local_runs_read_an_unparseable_error_file_as_the_tasks_failure(tmp_path):
    (tmp_path / "error.pb").write_bytes(b"\xff\xff\xff\xff not a protobuf")
    error = _read_local(tmp_path)
    assert error is not None and error.code == "ErrorFileUnparseable"
    assert error.kind == "system" and not error.recoverable
    assert "is not an ErrorDocument" in error.message


@pytest.mark.pure
@pytest.mark.parametrize("body", [b"", b"\x08\x01"], ids=["empty", "another-message"])
def test_an_error_file_that_parses_but_holds_no_error_is_unparseable(tmp_path, body):
    """Bytes protobuf accepts (none, or another message's field) are not a0's report of what the task raised."""
    (tmp_path / "error.pb").write_bytes(body)
    error = _read_local(tmp_path)
    assert error is not None and (error.code, error.kind, error.recoverable) == (
        "ErrorFileUnparseable",
        "system",
        False,
    )


@pytest.mark.pure
def test_a_store_that_hangs_is_read_on_the_callers_loop_and_left_when_the_time_is_up(monkeypatch):
    """An async store (S3, GCS, Azure through Flyte's storage) is read with a ranged call on the poll's loop: at
    the time bound it is cancelled, not left in a thread of the default pool that c0's other work shares."""
    from flyte import storage
    from fsspec.asyn import AsyncFileSystem

    left = []

    class HangingStore(AsyncFileSystem):
        async def _info(self, path, **kwargs):
            return {"name": path, "size": 10, "type": "file"}

        async def _cat_file(self, path, start=None, end=None, **kwargs):
            assert (start, end) == (0, MAX_ERROR_FILE_BYTES + 1)
            try:
                await asyncio.Event().wait()
            finally:
                left.append(path)

    async def there(path, **kwargs):
        return True

    monkeypatch.setattr(storage, "exists", there)
    monkeypatch.setattr(storage, "get_underlying_filesystem", lambda path=None, **kwargs: HangingStore())
    with pytest.raises(error_file.ErrorFileUnreadable, match="no answer within 0.2s"):
        asyncio.run(read_task_error("s3://bucket/outputs", timeout=0.2))
    assert left == ["s3://bucket/outputs/error.pb"]
    assert not [t.name for t in threading.enumerate() if t.name.startswith("asyncio_")], "a pool thread still reads"


@pytest.mark.pure
def test_local_runs_still_read_a0s_error_file(tmp_path):
    (tmp_path / "error.pb").write_bytes(_value_error())
    error = _read_local(tmp_path)
    assert error is not None and (error.code, error.kind) == ("ValueError", "user")


def _put(store: LocalBlobServer, outputs: str, body) -> None:
    s3 = store.client()
    key = outputs.removeprefix(f"s3://{store.bucket}/") + "/error.pb"
    s3.upload_fileobj(body, store.bucket, key)


class _Zeros:
    """`size` bytes of zeros as a file, made as read (the test holds no 200 MB buffer of its own)."""

    def __init__(self, size: int) -> None:
        self.left = size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        self.left -= n
        return b"\0" * n


def _memory_kib(pid: int, field: str) -> int:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def test_through_c0_a_200_mb_error_file_fails_its_task_saying_so_and_c0_is_unharmed(
    armada, store, tmp_path, pods_tmp_path
):
    import io

    go = pods_tmp_path / "go"
    big, small = "s3://flyte/raw/big/a0/0", "s3://flyte/raw/small/a0/0"
    garbage = "s3://flyte/raw/garbage/a0/0"
    env = c0_env(armada.url, store.endpoint, error_read_timeout_seconds="30")
    with c0_process(env, tmp_path / "c0.log") as c0:
        metas = {}
        for run, outputs in (("big", big), ("small", small), ("garbage", garbage)):
            template = python_template(WAIT_THEN_EXIT_0)
            template.container.args.extend(["--outputs-path", outputs, "--go", str(go)])
            request = connector_pb2.CreateTaskRequest(
                template=template, output_prefix=outputs, task_execution_metadata=execution_metadata(run=run)
            )
            metas[run] = c0.stub.CreateTask(request, timeout=60).resource_meta
        _put(store, big, _Zeros(BIG))
        _put(store, small, io.BytesIO(_value_error()))
        _put(store, garbage, io.BytesIO(b"\xff" * 1000))
        pid = c0.process.pid
        before = _memory_kib(pid, "VmHWM")
        go.touch()

        resources = _poll_all(c0.stub, metas, timeout=120)
        growth = (_memory_kib(pid, "VmHWM") - before) * 1024

    assert resources["big"].phase == TaskExecution.FAILED, {r: v.message for r, v in resources.items()}
    assert "ErrorFileTooLarge" in resources["big"].message and f"is {BIG} bytes" in resources["big"].message
    assert "SYSTEM error" in resources["big"].message
    assert resources["garbage"].phase == TaskExecution.FAILED, resources["garbage"].message
    assert "ErrorFileUnparseable" in resources["garbage"].message
    # other tasks' polls: a0's own error.pb still reads as the task's error
    assert resources["small"].phase in (TaskExecution.FAILED, TaskExecution.RETRYABLE_FAILED)
    assert "ValueError: bad input" in resources["small"].message, resources["small"].message
    assert growth < MEMORY_GROWTH_ALLOWED, f"c0's peak memory grew by {growth / 2**20:.1f} MiB reading error.pb"


def _poll_all(stub, metas: dict[str, bytes], timeout: float) -> dict[str, connector_pb2.Resource]:
    """GetTask for each task, round after round, until each is terminal; fails naming the last messages."""
    deadline, done = time.monotonic() + timeout, {}
    while len(done) < len(metas):
        for run, meta in metas.items():
            if run in done:
                continue
            request = connector_pb2.GetTaskRequest(resource_meta=meta, task_category=ARMADA_TASKS)
            resource = stub.GetTask(request, timeout=60).resource
            if resource.phase in TERMINAL:
                done[run] = resource
        assert time.monotonic() < deadline, f"not terminal: {set(metas) - set(done)}; done: {done}"
        time.sleep(0.1)
    return done
