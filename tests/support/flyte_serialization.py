"""Serialise real Flyte tasks into task templates, as `flyte run`/`flyte deploy` would."""

from __future__ import annotations

import pathlib

import pytest


@pytest.fixture
def serialize(request):
    from flyte.models import CodeBundle, SerializationContext

    from armada_flyte.task.flyte_internals import get_proto_task

    def _serialize(task, root_dir: pathlib.Path | None = None):
        sctx = SerializationContext(
            project="proj",
            domain="dev",
            org="org",
            version="v1",
            root_dir=root_dir or request.path.parent,
            code_bundle=CodeBundle(tgz="s3://bucket/code.tgz", computed_version="x", destination="/opt/flyte/"),
        )
        return get_proto_task(task, sctx)

    return _serialize
