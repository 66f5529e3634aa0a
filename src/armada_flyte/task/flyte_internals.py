"""Every private Flyte API (`flyte._...`) the package uses, from one place.

Flyte's private modules may change in any release: on a Flyte upgrade, this is the one file to
re-check. The task class's two bases load eagerly: through `flyte.extend` they would cost the
author surface its image-build machinery (about 0.25 s). The rest loads on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from flyte._task import AsyncFunctionTaskTemplate
from flyte._task_plugins import TaskPluginRegistry

_ON_FIRST_USE = {
    "build_code_bundle": ("flyte._code_bundle", "build_code_bundle"),
    "build_images": ("flyte._deploy", "build_images"),
    "connector_servicers": ("flyte.connectors._server", None),
    "controller_state": ("flyte._internal.controllers", "_ControllerState"),
    "convert": ("flyte._internal.runtime.convert", None),
    "get_init_config": ("flyte._initialize", "get_init_config"),
    "get_proto_task": ("flyte._internal.runtime.task_serde", "get_proto_task"),
    "internal_ctx": ("flyte._context", "internal_ctx"),
    "io": ("flyte._internal.runtime.io", None),
    "load_connectors": ("flyte.connectors.utils", "_load_connectors"),
    "print_connector_metadata": ("flyte.connectors.utils", "print_metadata"),
    "render_task_template": ("flyte.connectors.utils", "_render_task_template"),
}

__all__ = ["AsyncFunctionTaskTemplate", "TaskPluginRegistry", "next_call_number", *_ON_FIRST_USE]


def next_call_number(tctx: Any, key: str) -> int:
    """The next number (from 1) of the calls under `key` the running action has made: Flyte's own counter
    (`TaskContext._call_counter`), which starts again at every attempt, so the numbers repeat on a retry."""
    return tctx._call_counter.next(key)


def __getattr__(name: str) -> Any:
    if name not in _ON_FIRST_USE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module_name, attribute = _ON_FIRST_USE[name]
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value
