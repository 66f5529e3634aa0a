"""Serialise real Flyte tasks into task templates, as `flyte run`/`flyte deploy` would."""

from __future__ import annotations

import pathlib

import pytest


@pytest.fixture
def serialize(tmp_path):
    from flyte._internal.runtime.task_serde import get_proto_task
    from flyte.models import CodeBundle, SerializationContext

    def _serialize(task, root_dir: pathlib.Path | None = None):
        sctx = SerializationContext(
            project="proj",
            domain="dev",
            org="org",
            version="v1",
            root_dir=root_dir or pathlib.Path(__file__).parent,
            code_bundle=CodeBundle(tgz="s3://bucket/code.tgz", computed_version="x", destination="/opt/flyte/"),
        )
        return get_proto_task(task, sctx)

    return _serialize
