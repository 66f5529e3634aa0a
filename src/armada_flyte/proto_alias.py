"""Make armada_client and flyteidl2 importable in one process.

armada_client vendors its own copies of google/api/{http,annotations}.proto, while
flyteidl2 (through googleapis-common-protos) registers the standard ones. Protobuf refuses a
second file with the same name, so whichever loads second fails with
``duplicate file name google/api/http.proto``. Pointing armada_client's vendored module names
at the standard modules, before armada_client is first imported, leaves one copy of each file.
"""

from __future__ import annotations

import importlib
import sys

_VENDORED = ("http_pb2", "annotations_pb2")


def alias_vendored_google_api() -> None:
    """Register the standard google.api modules under armada_client's vendored names."""
    for name in _VENDORED:
        vendored = f"armada_client.google.api.{name}"
        if vendored in sys.modules:
            continue
        try:
            standard = importlib.import_module(f"google.api.{name}")
        except ImportError:  # googleapis-common-protos absent: nothing to clash with.
            return
        sys.modules[vendored] = standard
