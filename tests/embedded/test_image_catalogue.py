"""The cluster file's image catalogue: the images the nodes hold, for the process pod runner (as `kind load`).

A catalogued image runs with its programs' folder first on PATH and its ENTRYPOINT/CMD combined
with the container's command/args by Kubernetes' rules. A pod whose image is not catalogued stays
pending and then fails as Armada's executor fails a pod whose image pull failed: its pending-pod
event check (`Failed to pull image.* failed to pull and unpack image`, grace 90s, action Fail in
config/executor/config.yaml) ends the run with createStuckPodMessage's text
(internal/executor/service/pod_issue_handler.go).
"""

from __future__ import annotations

import pathlib
import time

import pytest
from armada_client.armada import submit_pb2

from armada_flyte.embedded import Cluster
from armada_flyte.errors import InvalidConfig

from support.job_events import job_of, job_set_events, kind
from support.pods import item, node_set, pod, submit_one
from support.waiting import job_error, wait_for_state, wait_until

pytestmark = pytest.mark.embedded_only


def _programs(folder: pathlib.Path) -> pathlib.Path:
    """A folder with one program, `greet`, that prints its name and arguments."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "greet"
    program.write_text('#!/bin/sh\necho "greet $*"\n')
    program.chmod(0o755)
    return folder


def _cluster(programs: pathlib.Path, grace: float = 1.0) -> dict:
    return {
        "images": [
            {"image": "example.org/tools:1", "path": str(programs), "entrypoint": ["greet", "from-entrypoint"]},
            {"image": "alpine:3.20.0", "path": str(programs), "cmd": ["greet", "from-cmd"]},
        ],
        "imagePullFailureGraceSeconds": grace,
        "node_sets": [node_set("amd64", cpu="4")],
    }


def _image_pod(image: str, command=(), args=()):
    spec = pod(command, args=args)
    spec.containers[0].image = image
    return spec


@pytest.mark.parametrize(
    ("command", "args", "expected"),
    [
        ((), ("one", "two"), "greet from-entrypoint one two"),  # args replace CMD, ENTRYPOINT stays
        (("greet", "own"), (), "greet own"),  # command replaces ENTRYPOINT (and CMD)
        ((), (), "greet from-entrypoint"),
    ],
)
def test_catalogued_image_runs_its_entrypoint_with_its_programs_first_on_path(
    own_armada, tmp_path, command, args, expected
) -> None:
    armada, client = own_armada(_cluster(_programs(tmp_path / "bin")))
    job_id = submit_one(client, "conformance", "images", item(_image_pod("example.org/tools:1", command, args)))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    assert expected in armada.logs(job_id)


def test_cmd_runs_when_the_pod_gives_neither_command_nor_args(own_armada, tmp_path) -> None:
    armada, client = own_armada(_cluster(_programs(tmp_path / "bin")))
    job_id = submit_one(client, "conformance", "images", item(_image_pod("docker.io/library/alpine:3.20.0")))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    assert "greet from-cmd" in armada.logs(job_id)


def test_an_image_no_node_holds_fails_as_armada_fails_a_failed_pull(own_armada, tmp_path) -> None:
    armada, client = own_armada(_cluster(_programs(tmp_path / "bin"), grace=2.0))
    started = time.monotonic()
    job_id = submit_one(client, "conformance", "pull", item(_image_pod("some-non-existing-image:1.2.3", args=["ls"])))
    wait_for_state(client, job_id, submit_pb2.PENDING)
    wait_for_state(client, job_id, submit_pb2.FAILED)
    assert time.monotonic() - started >= 2.0  # pending for the check's grace period first
    events = [m for m in job_set_events(client, "conformance", "pull") if job_of(m) == job_id]
    assert "running" not in [kind(m) for m in events]
    failed = events[-1].message.failed
    assert failed.reason == (
        "Unable to start pod - encountered an unrecoverable problem.\n"
        'Matched check: "check-0"\n'
        'Failed to pull image "some-non-existing-image:1.2.3": failed to pull and unpack image '
        '"docker.io/library/some-non-existing-image:1.2.3": failed to resolve reference '
        '"docker.io/library/some-non-existing-image:1.2.3": not found in the embedded cluster\'s image catalogue '
        "(the cluster file's images section)"
    )
    # No container terminated, so none is listed (ExtractFailedPodContainerStatuses skips waiting ones);
    # no category rule matches, so the default one (Armada's local executor config) applies.
    assert list(failed.container_statuses) == []
    assert failed.failure_category == "uncategorized"
    assert job_error(client, job_id) == failed.reason


def test_a_pod_waiting_for_its_image_is_cancelled_at_once(own_armada, tmp_path) -> None:
    armada, client = own_armada(_cluster(_programs(tmp_path / "bin"), grace=600))
    job_id = submit_one(client, "conformance", "pull", item(_image_pod("missing:1", args=["ls"])))
    wait_for_state(client, job_id, submit_pb2.PENDING)
    client.cancel_jobs(queue="conformance", job_set_id="pull", job_id=job_id)
    wait_for_state(client, job_id, submit_pb2.CANCELLED)
    # The node is free again: a pod needing all of it runs.
    whole_node = _image_pod("alpine:3.20.0", args=["greet", "after"])
    whole_node.containers[0].resources.requests["cpu"].string = "4"
    whole_node.containers[0].resources.limits["cpu"].string = "4"
    after = submit_one(client, "conformance", "pull", item(whole_node))
    wait_for_state(client, after, submit_pb2.SUCCEEDED)
    wait_until(lambda: "greet after" in armada.logs(after))


def test_without_a_catalogue_any_image_runs_on_the_host(own_armada) -> None:
    armada, client = own_armada({"node_sets": [node_set("amd64", cpu="4")]})
    job_id = submit_one(client, "conformance", "any", item(_image_pod("some-non-existing-image:1.2.3", ["echo", "hi"])))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    assert "hi" in armada.logs(job_id)


@pytest.mark.pure
def test_a_program_folder_that_is_not_there_is_refused_naming_the_field(tmp_path) -> None:
    data = {"images": [{"image": "alpine:3.20.0", "path": "no-such-folder"}], "node_sets": [node_set("a")]}
    with pytest.raises(InvalidConfig) as raised:
        Cluster.from_mapping(data, "cluster.yaml", tmp_path)
    assert raised.value.field == "cluster.yaml: images.0.path"
    assert raised.value.value == "no-such-folder"
    assert "is not a folder" in raised.value.fix


@pytest.mark.pure
def test_program_folders_are_relative_to_the_cluster_file(tmp_path) -> None:
    _programs(tmp_path / "images" / "bin")
    (tmp_path / "cluster.yaml").write_text(
        "images:\n  - image: alpine:3.20.0\n    path: images/bin\n"
        "node_sets:\n  - {name: a, nodes: 1, labels: {kubernetes.io/arch: amd64}, "
        "allocatable: {cpu: '1', memory: 1Gi}}\n"
    )
    cluster = Cluster.from_yaml(tmp_path / "cluster.yaml")
    assert cluster.images is not None
    image = cluster.images.find("docker.io/library/alpine:3.20.0")
    assert image is not None and image.programs == (tmp_path / "images" / "bin").resolve()


@pytest.mark.pure
def test_an_unknown_image_field_is_refused() -> None:
    data = {"images": [{"image": "alpine", "entrypiont": ["sh"]}], "node_sets": [node_set("a")]}
    with pytest.raises(InvalidConfig) as raised:
        Cluster.from_mapping(data, "cluster.yaml")
    assert "images.0.entrypiont" in raised.value.field


@pytest.mark.pure
def test_an_image_listed_twice_is_refused() -> None:
    data = {
        "images": [{"image": "alpine"}, {"image": "docker.io/library/alpine:latest"}],
        "node_sets": [node_set("a")],
    }
    with pytest.raises(InvalidConfig) as raised:
        Cluster.from_mapping(data, "cluster.yaml")
    assert raised.value.field == "cluster.yaml: images.1.image"
    assert "images.0 is the same image" in raised.value.fix
