"""The generated stubs of Armada's executor API, found and imported once.

They are a build product (scripts/build-executor-stubs.sh) kept outside the package, in
`ARMADA_FLYTE_EXECUTOR_STUBS` or the cache folder. They import armada_client's modules for the
Kubernetes protos and api/submit.proto, so armada_client is imported first, behind the project's
google.api aliasing (importing `armada_flyte` does it).
"""

from __future__ import annotations

import importlib
import os
import pathlib
import sys
from types import ModuleType

import armada_flyte  # noqa: F401  (aliases armada_client's vendored google.api protos before armada_client loads)
from armada_flyte.errors import ArmadaFlyteError

ARMADA_VERSION = "v0.22.7"
"""The Armada release whose executor API the stubs are generated from (and that this executor speaks)."""
STUBS_ENV = "ARMADA_FLYTE_EXECUTOR_STUBS"
BUILD_SCRIPT = "scripts/build-executor-stubs.sh"
PACKAGE = "armada_executorapi"


class ExecutorStubsMissing(ArmadaFlyteError):
    """The executor API stubs have not been generated where the executor looks for them."""

    def __init__(self, folder: pathlib.Path):
        self.folder = folder
        super().__init__(
            f"Armada's executor API stubs ({ARMADA_VERSION}) are not in {folder}: generate them with "
            f"{BUILD_SCRIPT} (it prints the folder), or point {STUBS_ENV} at a folder it built"
        )


def stubs_folder() -> pathlib.Path:
    """Where the stubs are: `ARMADA_FLYTE_EXECUTOR_STUBS`, else the build script's cache folder."""
    explicit = os.environ.get(STUBS_ENV)
    if explicit:
        return pathlib.Path(explicit)
    cache = os.environ.get("ARMADA_FLYTE_CACHE") or str(pathlib.Path.home() / ".cache" / "armada-flyte")
    return pathlib.Path(cache) / "executor-stubs" / ARMADA_VERSION


def _import(name: str) -> ModuleType:
    folder = stubs_folder()
    if not (folder / PACKAGE / "__init__.py").is_file():
        raise ExecutorStubsMissing(folder)
    if str(folder) not in sys.path:
        sys.path.append(str(folder))
    return importlib.import_module(f"{PACKAGE}.{name}")


executorapi_pb2 = _import("pkg.executorapi.executorapi_pb2")
executorapi_pb2_grpc = _import("pkg.executorapi.executorapi_pb2_grpc")
events_pb2 = _import("pkg.armadaevents.events_pb2")
