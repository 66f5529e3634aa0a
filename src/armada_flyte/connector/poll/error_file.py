"""Reading a0's error.pb, the only place a failed user function shows up (a0 exits 0 anyway), with
the connector's own blob-store keys, within a time bound."""

from __future__ import annotations

import asyncio
import logging
from typing import Optional
from urllib.parse import urlparse

from armada_flyte.connector.config.blob import BlobSettings
from armada_flyte.connector.model.task_error import TaskError

log = logging.getLogger(__name__)

ERROR_FILE = "error.pb"


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
    unbounded read would stall the poll that must report the job terminal.
    """
    if not outputs_path:
        return None
    path = outputs_path.rstrip("/") + "/" + ERROR_FILE
    with_settings = blob is not None and blob.endpoint and path.startswith("s3://")
    store = f"the blob store at {blob.endpoint}" if with_settings and blob is not None else "the blob store"
    try:
        if with_settings and blob is not None:
            data = await asyncio.wait_for(_read_s3(path, blob), timeout)
        else:
            data = await asyncio.wait_for(_read_with_flyte_storage(path), timeout)
    except asyncio.TimeoutError:
        raise ErrorFileUnreadable(f"{store} is unreachable: no answer within {timeout:.1f}s reading {path}") from None
    except Exception as exc:  # storage not reachable, permissions, ...
        said = str(exc).split("\n", 1)[0]  # obstore appends a multi-line debug dump
        if isinstance(exc, ConnectionError) or any(sign in str(exc).lower() for sign in _UNREACHABLE_SIGNS):
            raise ErrorFileUnreadable(f"{store} is unreachable reading {path}: {said}") from None
        raise ErrorFileUnreadable(f"could not read {path}: {said}") from None
    return None if data is None else parse_error_document(data)


def parse_error_document(data: bytes) -> TaskError:
    from flyteidl2.core import execution_pb2

    document = execution_pb2.ErrorDocument()
    document.ParseFromString(data)
    error = document.error
    kind = {execution_pb2.ExecutionError.USER: "user", execution_pb2.ExecutionError.SYSTEM: "system"}.get(
        error.origin, "unknown"
    )
    recoverable = error.kind == execution_pb2.ContainerError.RECOVERABLE
    return TaskError(code=error.code or "Error", message=error.message, kind=kind, recoverable=recoverable)


async def _read_s3(path: str, blob: BlobSettings) -> Optional[bytes]:
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
    return bytes(await result.bytes_async())


async def _read_with_flyte_storage(path: str) -> Optional[bytes]:
    from flyte import storage

    if not await storage.exists(path):
        return None
    return b"".join([chunk async for chunk in storage.get_stream(path=path)])
