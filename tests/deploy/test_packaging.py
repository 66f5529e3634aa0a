"""The built wheel carries what an installed package reads at run time: the node-group presets,
the embedded cluster, the runtime image's Dockerfile (behind symlinks in the checkout), and the
scheduler-reporting stubs generated at build time."""

import pathlib
import subprocess
import sys
import zipfile

ROOT = pathlib.Path(__file__).parents[2]


def test_wheel_contains_presets_cluster_and_runtime_image_files(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("armada_flyte-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    presets = {p.name for p in (ROOT / "arch").glob("*.yaml")}
    assert {f"armada_flyte/connector/config/presets/{name}" for name in presets} <= names
    assert "armada_flyte/cluster/default_cluster.yaml" in names
    # the Armada config examples the doctor's fixes point to (`armada-flyte doctor --example ...`)
    assert {
        "armada_flyte/admin/doctor/armada_configs/executor-config.yaml",
        "armada_flyte/admin/doctor/armada_configs/scheduler-config.yaml",
    } <= names
    # generated from the .proto at build time (setup.py), never committed
    assert {
        "armada_flyte/protos/scheduler_reporting_pb2.py",
        "armada_flyte/protos/scheduler_reporting_pb2_grpc.py",
        "armada_flyte/protos/node_pb2.py",
        "armada_flyte/protos/node_pb2_grpc.py",
    } <= names
    assert {
        "armada_flyte/task/runtime_image_files/Dockerfile",
        "armada_flyte/task/runtime_image_files/docker-bake.hcl",
    } <= names
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "armada = armada_flyte.connector.service" in entry_points
    assert "armada-flyte = armada_flyte.admin.cli:main" in entry_points
