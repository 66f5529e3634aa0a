"""Build step: generate the Python stubs of src/armada_flyte/protos/*.proto with grpcio-tools.

The stubs are written next to the .proto files before setuptools collects the package, so a
wheel, an sdist build and `pip install -e .` all carry them; they are not committed.
"""

import pathlib

from setuptools import setup
from setuptools.command.build_py import build_py

SRC = pathlib.Path(__file__).parent / "src"
PROTOS = SRC / "armada_flyte" / "protos"


def generate_stubs() -> None:
    from grpc_tools import protoc  # a build requirement (pyproject's [build-system])

    include = str(pathlib.Path(protoc.__file__).parent / "_proto")
    for proto in sorted(PROTOS.glob("*.proto")):
        args = ["protoc", f"-I{SRC}", f"-I{include}", f"--python_out={SRC}", f"--grpc_python_out={SRC}"]
        if protoc.main([*args, str(proto.relative_to(SRC))]) != 0:
            raise SystemExit(f"protoc failed on {proto}")


class BuildPyWithStubs(build_py):
    def run(self) -> None:
        generate_stubs()
        super().run()


setup(cmdclass={"build_py": BuildPyWithStubs})
