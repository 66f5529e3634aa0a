"""Generate the `armada_executorapi` package: Python stubs of Armada's executor API.

Called by scripts/build-executor-stubs.sh with Armada's Go module folder, the destination and the
version. Three of the module's .proto files are compiled: pkg/executorapi/executorapi.proto,
pkg/armadaevents/events.proto and the scheduler objects events.proto imports. Everything they import
that armada_client already ships (the Kubernetes protos, api/submit.proto, google's) is taken from
armada_client's own registered descriptors, handed to protoc as a descriptor set, and the generated
modules import armada_client's modules for them: a process then registers each .proto file once,
under the name armada_client gave it (submit.proto is `armada/submit.proto` there, not
`pkg/api/submit.proto`, so the executor API's import of it is renamed before compiling).
"""

from __future__ import annotations

import pathlib
import re
import shutil
import sys
import tempfile

PACKAGE = "armada_executorapi"
COMPILED = (
    "pkg/executorapi/executorapi.proto",
    "pkg/armadaevents/events.proto",
    "internal/scheduler/schedulerobjects/schedulerobjects.proto",
)
RENAMED_IMPORTS = {'import "pkg/api/submit.proto";': 'import "armada/submit.proto";'}
"""Imports of files armada_client registers under another name."""
ARMADA_CLIENT_MODULES = (
    "armada_client.armada.submit_pb2",
    "armada_client.k8s.io.api.core.v1.generated_pb2",
    "armada_client.k8s.io.api.networking.v1.generated_pb2",
    "armada_client.k8s.io.apimachinery.pkg.api.resource.generated_pb2",
)
"""armada_client's modules for the files the compiled ones import (their imports come along)."""
PYTHON_IMPORT = re.compile(r"^(from|import) (armada|k8s|pkg|internal)([. ])", re.MULTILINE)


def dependency_set(path: pathlib.Path) -> None:
    """Write armada_client's registered descriptors, and everything they import, as a FileDescriptorSet."""
    import importlib

    from google.protobuf import descriptor_pb2

    import armada_flyte  # noqa: F401  (first: aliases armada_client's vendored google.api protos)

    ordered: list = []
    seen: set[str] = set()

    def visit(file_descriptor) -> None:
        if file_descriptor.name in seen:
            return
        seen.add(file_descriptor.name)
        for dependency in file_descriptor.dependencies:
            visit(dependency)
        ordered.append(file_descriptor)

    for name in ARMADA_CLIENT_MODULES:
        visit(importlib.import_module(name).DESCRIPTOR)
    descriptor_set = descriptor_pb2.FileDescriptorSet()
    for file_descriptor in ordered:
        file_descriptor.CopyToProto(descriptor_set.file.add())
    path.write_bytes(descriptor_set.SerializeToString())


def copy_sources(module: pathlib.Path, into: pathlib.Path) -> None:
    for relative in COMPILED:
        text = (module / relative).read_text()
        for old, new in RENAMED_IMPORTS.items():
            text = text.replace(old, new)
        target = into / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def compile_protos(sources: pathlib.Path, descriptors: pathlib.Path, out: pathlib.Path) -> None:
    from grpc_tools import protoc

    include = pathlib.Path(protoc.__file__).parent / "_proto"
    args = [
        "protoc",
        f"-I{sources}",
        f"-I{include}",
        f"--descriptor_set_in={descriptors}",
        f"--python_out={out}",
        f"--pyi_out={out}",
        f"--grpc_python_out={out}",
        *COMPILED,
    ]
    if protoc.main(args) != 0:
        raise SystemExit(f"protoc failed: {' '.join(args)}")


def rewrite_imports(package: pathlib.Path) -> None:
    """Point the generated imports at armada_client's modules (armada, k8s) or at this package (pkg, internal)."""

    def target(match: re.Match) -> str:
        keyword, root, after = match.groups()
        owner = "armada_client" if root in ("armada", "k8s") else PACKAGE
        return f"{keyword} {owner}.{root}{after}"

    for path in package.rglob("*.py*"):
        path.write_text(PYTHON_IMPORT.sub(target, path.read_text()))
    for folder in [package, *(p for p in package.rglob("*") if p.is_dir())]:
        (folder / "__init__.py").touch()


def main(module: str, destination: str, version: str) -> None:
    dest = pathlib.Path(destination)
    with tempfile.TemporaryDirectory(prefix="executor-stubs-") as scratch:
        work = pathlib.Path(scratch)
        sources, generated = work / "protos", work / "stage" / PACKAGE
        generated.mkdir(parents=True)
        copy_sources(pathlib.Path(module), sources)
        dependency_set(work / "dependencies.pb")
        compile_protos(sources, work / "dependencies.pb", generated)
        rewrite_imports(generated)
        info = build_info(module, version)
        (work / "stage" / "BUILD-INFO").write_text(info)
        staged = pathlib.Path(tempfile.mkdtemp(prefix=f".stage-{version}-", dir=dest.parent))
        shutil.copytree(work / "stage", staged, dirs_exist_ok=True)
    built = dest / "BUILD-INFO"
    if built.exists() and built.read_text() == info:  # built meanwhile by another run: keep that one
        shutil.rmtree(staged)
        return
    if dest.exists():  # an unfinished build, or one by another grpcio-tools
        shutil.rmtree(dest)
    staged.rename(dest)


def build_info(module: str, version: str) -> str:
    """What the stubs were built from; the generated code needs a protobuf runtime at least as new as
    the grpcio-tools that generated it, so a different one rebuilds them (build-executor-stubs.sh)."""
    from importlib.metadata import version as installed

    return f"armada={version}\nmodule={module}\ngrpcio-tools={installed('grpcio-tools')}\n"


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit("usage: executor_stubs.py ARMADA_MODULE_DIR DESTINATION VERSION")
    main(*sys.argv[1:])
