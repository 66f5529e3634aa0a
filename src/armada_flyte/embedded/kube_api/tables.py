"""Lists as `meta.k8s.io/v1` Tables, the form kubectl asks for to print (`Accept: ...;as=Table`).

The columns are those the API server's printers give these resources
(kubernetes/pkg/printers/internalversion/printers.go): without a Table kubectl could print only
NAME and AGE. Each row carries its object's metadata (`PartialObjectMetadata`), which kubectl
reads for `-A` (the namespace column) and `-o name`.
"""

from __future__ import annotations

import datetime
from typing import Any, Callable

Row = Callable[[dict[str, Any]], list[Any]]


def wants_table(accept: str) -> bool:
    return any("as=Table" in part and "g=meta.k8s.io" in part for part in accept.split(","))


def table(resource: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    columns, row = _PRINTERS[resource]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": "1"},
        "columnDefinitions": [
            {"name": name, "type": kind, "format": "name" if name == "Name" else "", "description": "", "priority": p}
            for name, kind, p in columns
        ],
        "rows": [
            {
                "cells": row(item),
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": item["metadata"],
                },
            }
            for item in items
        ],
    }


def _age(item: dict[str, Any]) -> str:
    created = datetime.datetime.strptime(item["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ")
    seconds = int((datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - created).total_seconds())
    seconds = max(seconds, 0)
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= 2 * size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _pod(item: dict[str, Any]) -> list[Any]:
    phase = item["status"]["phase"]
    containers = len(item["spec"]["containers"])
    ready = containers if phase == "Running" else 0
    # kubectl's STATUS for a finished pod is its container's reason; Completed or Error
    status = {"Succeeded": "Completed", "Failed": "Error"}.get(phase, phase)
    return [
        item["metadata"]["name"],
        f"{ready}/{containers}",
        status,
        0,
        _age(item),
        item["status"]["podIP"],
        item["spec"]["nodeName"],
    ]


def _node(item: dict[str, Any]) -> list[Any]:
    return [item["metadata"]["name"], "Ready", "<none>", _age(item), item["status"]["nodeInfo"]["kubeletVersion"]]


def _namespace(item: dict[str, Any]) -> list[Any]:
    return [item["metadata"]["name"], item["status"]["phase"], _age(item)]


def _service(item: dict[str, Any]) -> list[Any]:
    spec = item["spec"]
    ports = ",".join(
        f"{p['port']}:{p['nodePort']}/{p['protocol']}" if "nodePort" in p else f"{p['port']}/{p['protocol']}"
        for p in spec["ports"]
    )
    return [item["metadata"]["name"], spec["type"], spec["clusterIP"], "<none>", ports, _age(item)]


_PRINTERS: dict[str, tuple[list[tuple[str, str, int]], Row]] = {
    "pods": (
        [
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "integer", 0),
            ("Age", "string", 0),
            ("IP", "string", 1),
            ("Node", "string", 1),
        ],
        _pod,
    ),
    "nodes": (
        [("Name", "string", 0), ("Status", "string", 0), ("Roles", "string", 0), ("Age", "string", 0)]
        + [("Version", "string", 0)],
        _node,
    ),
    "namespaces": ([("Name", "string", 0), ("Status", "string", 0), ("Age", "string", 0)], _namespace),
    "services": (
        [
            ("Name", "string", 0),
            ("Type", "string", 0),
            ("Cluster-IP", "string", 0),
            ("External-IP", "string", 0),
            ("Port(s)", "string", 0),
            ("Age", "string", 0),
        ],
        _service,
    ),
}
