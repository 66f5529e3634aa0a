"""A task's template as a Flyte backend hands it to a connector: serialised as `flyte deploy` would,
its code bundle in the blob store, and the placeholders a backend fills filled (run and action
names are left to the connector, as a backend leaves them)."""

from __future__ import annotations

import pathlib


async def registered_template(project: pathlib.Path, task, prefix: str):
    from flyte._internal.runtime.task_serde import get_proto_task
    from flyte.models import SerializationContext

    from armada_flyte.local.run import upload_code_bundle

    bundle = await upload_code_bundle(project, prefix, prefix)
    sctx = SerializationContext(
        project="proj", domain="dev", org="", version="v1", root_dir=project, code_bundle=bundle
    )
    return rendered(get_proto_task(task, sctx), prefix)


def rendered(template, prefix: str):
    """`template` with the placeholders a backend fills filled for an attempt whose output prefix is `prefix`
    (run and action names left to the connector, as a backend leaves them)."""
    values = (
        ("{{.input}}", f"{prefix}/inputs.pb"),
        ("{{.outputPrefix}}", prefix),
        ("{{.rawOutputDataPrefix}}", f"{prefix}/raw"),
        ("{{.checkpointOutputPrefix}}", f"{prefix}/checkpoint"),
        ("{{.prevCheckpointPrefix}}", ""),
        ("{{.runStartTime}}", "2026-11-29T00:00:00+00:00"),
    )
    args = []
    for arg in template.container.args:
        for placeholder, value in values:
            arg = arg.replace(placeholder, value)
        args.append(arg)
    del template.container.args[:]
    template.container.args.extend(args)
    return template
