"""How many calls of each gRPC method the server has answered, counted where they arrive.

Benchmarks and tests read these to see what a client really costs the server (a client-side
count would miss retries and hide batching bugs).
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any, Callable

import grpc


class CallCounter(grpc.aio.ServerInterceptor):
    """Counts every call by method name (e.g. `GetJobStatus`), before the handler runs (a grpc.aio interceptor)."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Any], handler_call_details: grpc.HandlerCallDetails
    ) -> Any:
        method = handler_call_details.method.rsplit("/", 1)[-1]
        with self._lock:
            self._counts[method] += 1
        return await continuation(handler_call_details)

    def counts(self) -> dict[str, int]:
        """Calls so far, by method name."""
        with self._lock:
            return dict(self._counts)

    def count(self, method: str) -> int:
        with self._lock:
            return self._counts[method]
