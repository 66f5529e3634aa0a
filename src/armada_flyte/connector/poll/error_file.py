"""Reading a0's error.pb, the only place a failed user function shows up (a0 exits 0 anyway), with
the connector's own blob-store keys, within a time bound and a size cap.

The file is written by the task, so its size and its bytes are the task's to choose: a shared c0 reads
at most `MAX_ERROR_FILE_BYTES` + 1 bytes of it, and a larger or unparseable one is the task's failure
(a non-recoverable SYSTEM error with a code saying which), not the poll's."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Optional
from urllib.parse import urlparse

from armada_flyte.connector.config.blob import BlobSettings
from armada_flyte.connector.model.task_error import TaskError

log = logging.getLogger(__name__)

ERROR_FILE = "error.pb"

MAX_ERROR_FILE_BYTES = 1024 * 1024
"""The largest error.pb read (1 MiB: a0 writes an exception's type, message and traceback, a few kB).
A larger one is never read whole: the poll stops after this many bytes + 1."""

READ_CHUNK_BYTES = 64 * 1024
"""The size of each piece of error.pb read from the store."""

TOO_LARGE = "ErrorFileTooLarge"
UNPARSEABLE = "ErrorFileUnparseable"


class ErrorFileUnreadable(Exception):
    """The blob store didn't say whether error.pb exists (timeout, refused, unreachable)."""


_UNREACHABLE_SIGNS = (
    "error sending request",
    "tcp connect error",
    "connection refused",
    "connection reset",
    "dns error",
)
"""How obstore (and aiohttp, under Flyte's storage) word a store they could not reach."""


async def read_task_error(
    outputs_path: str, timeout: float, blob: Optional[BlobSettings] = None
) -> Optional[TaskError]:
    """The error a0 wrote under `outputs_path`; None when it wrote none. `ErrorFileUnreadable` when
    the store can't tell within `timeout`: "unknown" must not pass for "succeeded".

    With the connector's blob settings (those it gives the pods), the file is read with them, so
    the `c0` service sees user errors without Flyte's storage being set up in its process.
    Otherwise Flyte's configured storage reads it (local runs). The time bound matters: an
    unbounded read would stall the poll that must report the job terminal. A file over
    `MAX_ERROR_FILE_BYTES` or one that isn't an ErrorDocument is the task's failure: a TaskError with
    the code `ErrorFileTooLarge` or `ErrorFileUnparseable` (SYSTEM, not recoverable).
    """
    if not outputs_path:
        return None
    path = outputs_path.rstrip("/") + "/" + ERROR_FILE
    with_settings = blob is not None and blob.endpoint and path.startswith("s3://")
    store = f"the blob store at {blob.endpoint}" if with_settings and blob is not None else "the blob store"
    try:
        if with_settings and blob is not None:
            data = await asyncio.wait_for(_read_s3(path, blob, MAX_ERROR_FILE_BYTES), timeout)
        else:
            data = await asyncio.wait_for(_read_with_flyte_storage(path, MAX_ERROR_FILE_BYTES), timeout)
    except ErrorFileTooLarge as exc:
        return _too_large(path, exc.size)
    except asyncio.TimeoutError:
        raise ErrorFileUnreadable(f"{store} is unreachable: no answer within {timeout:.1f}s reading {path}") from None
    except Exception as exc:  # storage not reachable, permissions, ...
        said = str(exc).split("\n", 1)[0]  # obstore appends a multi-line debug dump
        if isinstance(exc, ConnectionError) or any(sign in str(exc).lower() for sign in _UNREACHABLE_SIGNS):
            raise ErrorFileUnreadable(f"{store} is unreachable reading {path}: {said}") from None
        raise ErrorFileUnreadable(f"could not read {path}: {said}") from None
    if data is None:
        return None
    try:
        return parse_error_document(data)
    except ErrorFileUnparseable as exc:
        return _bad_error_file(
            UNPARSEABLE, f"{path} ({len(data)} bytes) is not an ErrorDocument ({exc}): something other than a0 wrote it"
        )


class ErrorFileTooLarge(Exception):
    """error.pb is over the cap; `size` is its size in bytes when the store said it (0: not known)."""

    def __init__(self, size: int = 0) -> None:
        super().__init__(size)
        self.size = size


class ErrorFileUnparseable(ValueError):
    """error.pb's bytes are not a Flyte ErrorDocument."""


def _bad_error_file(code: str, what: str) -> TaskError:
    """The task's failure for an error.pb the connector won't read: not recoverable (a retry writes the
    same file), SYSTEM (a0 did not say what the task raised)."""
    message = f"{code}: {what}; whether the task raised is unknown"
    return TaskError(code=code, message=message, kind="system", recoverable=False)


def _too_large(path: str, size: int) -> TaskError:
    said = f"{size} bytes" if size else "larger"
    return _bad_error_file(
        TOO_LARGE,
        f"{path} is {said}, over the {MAX_ERROR_FILE_BYTES}-byte cap the connector reads (MAX_ERROR_FILE_BYTES); "
        "a0 writes a few kB, so something else wrote it",
    )


def parse_error_document(data: bytes) -> TaskError:
    """a0's ErrorDocument as a TaskError; `ErrorFileUnparseable` when the bytes are not one."""
    from flyteidl2.core import execution_pb2
    from google.protobuf.message import DecodeError

    document = execution_pb2.ErrorDocument()
    try:
        document.ParseFromString(data)
    except DecodeError as exc:
        raise ErrorFileUnparseable(str(exc) or "the bytes do not parse") from None
    if not document.HasField("error"):  # empty, or bytes protobuf reads as some other message
        raise ErrorFileUnparseable("it holds no error")
    error = document.error
    kind = {execution_pb2.ExecutionError.USER: "user", execution_pb2.ExecutionError.SYSTEM: "system"}.get(
        error.origin, "unknown"
    )
    recoverable = error.kind == execution_pb2.ContainerError.RECOVERABLE
    return TaskError(code=error.code or "Error", message=error.message, kind=kind, recoverable=recoverable)


async def _read_s3(path: str, blob: BlobSettings, cap: int) -> Optional[bytes]:
    """At most `cap` bytes of the object; `ErrorFileTooLarge` once it is known to hold more (from its size
    in the answer's headers, before any of the body is read, or by counting what streams in)."""
    import obstore
    from obstore.store import S3Store

    url = urlparse(path)
    store = S3Store(
        url.netloc,
        endpoint=blob.endpoint,
        access_key_id=blob.access_key or None,
        secret_access_key=blob.secret_key or None,
        region=blob.region,
        client_options={"allow_http": blob.endpoint.startswith("http://")},
    )
    try:
        result = await obstore.get_async(store, url.path.lstrip("/"))
    except FileNotFoundError:
        return None
    size = result.meta["size"]
    if size > cap:
        raise ErrorFileTooLarge(size)
    return await _at_most(result.stream(min_chunk_size=READ_CHUNK_BYTES), cap)


async def _read_with_flyte_storage(path: str, cap: int) -> Optional[bytes]:
    """At most `cap` bytes through Flyte's storage (fsspec); `ErrorFileTooLarge` past them. Not Flyte's
    `get_stream`: it reads a whole file in one piece."""
    from flyte import storage
    from fsspec.asyn import AsyncFileSystem

    if not await storage.exists(path):
        return None
    fs = storage.get_underlying_filesystem(path=path)
    if isinstance(fs, AsyncFileSystem):
        # A ranged read on the caller's loop, cancelled with it: a thread left reading a store that hangs
        # would hold one of the default pool's few workers, which c0's token fetches and image checks share.
        data = await fs._cat_file(path, start=0, end=cap + 1)
    else:  # a local file: the thread's read ends

        def read() -> bytes:
            with fs.open(path, "rb") as file:
                return file.read(cap + 1)

        data = await asyncio.to_thread(read)
    if len(data) > cap:
        raise ErrorFileTooLarge()
    return data


async def _at_most(chunks: Any, cap: int) -> bytes:
    """The chunks' bytes; `ErrorFileTooLarge` as soon as they pass `cap` (the rest is never read)."""
    data = bytearray()
    async for chunk in chunks:
        data += bytes(chunk)
        if len(data) > cap:
            raise ErrorFileTooLarge()
    return bytes(data)
