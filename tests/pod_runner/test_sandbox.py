"""Mapping a pod's private paths into its sandbox: whole paths only, wherever they appear in a value."""

from __future__ import annotations

import pathlib

import pytest
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core

from armada_flyte.pod_runner.sandbox import Sandbox

pytestmark = pytest.mark.pure

SANDBOX = Sandbox(pathlib.Path("/sbx/job"), ("/opt/flyte",))


@pytest.mark.parametrize(
    ("given", "mapped"),
    [
        ("/opt/flyte", "/sbx/job/opt/flyte"),
        ("/opt/flyte/", "/sbx/job/opt/flyte/"),
        ("--dest=/opt/flyte/code", "--dest=/sbx/job/opt/flyte/code"),
        ("file:///opt/flyte/x", "file:///sbx/job/opt/flyte/x"),
        ("/a:/opt/flyte/b", "/a:/sbx/job/opt/flyte/b"),
        ("/opt/flyteish", "/opt/flyteish"),
        ("/var/opt/flyte", "/var/opt/flyte"),
        ("s3://bucket/opt/flyte", "s3://bucket/opt/flyte"),
    ],
)
def test_private_paths_are_mapped_and_others_left_alone(given: str, mapped: str) -> None:
    assert SANDBOX.map_paths(given) == mapped


def test_more_private_prefixes_can_be_given(tmp_path: pathlib.Path) -> None:
    sandbox = Sandbox.create(tmp_path / "job", ("/opt/flyte", "/workspace/"))
    assert sandbox.map_paths("/workspace/data") == f"{tmp_path}/job/workspace/data"
    assert (tmp_path / "job/workspace").is_dir() and (tmp_path / "job/opt/flyte").is_dir()


def test_memory_folders_are_dev_shm_and_memory_volumes(tmp_path: pathlib.Path) -> None:
    mounts = [core.VolumeMount(name="ram", mountPath="/cache"), core.VolumeMount(name="disk", mountPath="/data")]
    sandbox = Sandbox.create(tmp_path / "job").for_container(core.Container(volumeMounts=mounts))
    assert sandbox.memory_folders(core.Container(volumeMounts=mounts), frozenset({"ram"})) == (
        tmp_path / "job/volumes/ram",
        tmp_path / "job/dev/shm",
    )
    assert sandbox.map_paths("of=/dev/shm/fill") == f"of={tmp_path}/job/dev/shm/fill"


def test_a_volume_mounted_at_dev_shm_is_the_memory_folder(tmp_path: pathlib.Path) -> None:
    container = core.Container(volumeMounts=[core.VolumeMount(name="flyte-shm", mountPath="/dev/shm")])
    sandbox = Sandbox.create(tmp_path / "job").for_container(container)
    assert sandbox.memory_folders(container, frozenset({"flyte-shm"})) == (tmp_path / "job/volumes/flyte-shm",)
