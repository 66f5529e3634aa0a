"""A process pod is held to the cluster file's pod limits: a fork bomb stops at podPidsLimit and the pod fails
saying so, and a file written past podFileSizeLimit (RLIMIT_FSIZE) fails the container, naming the limit."""

from __future__ import annotations

import os
from typing import Callable

import pytest
from armada_client.armada import submit_pb2

from support.pods import cluster, item, node_set, pod, python, submit_one
from support.waiting import job_error, wait_for_state

pytestmark = pytest.mark.embedded_only

QUEUE = "conformance"
PIDS_LIMIT = 48
FORK_BOMB = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"


@pytest.fixture
def limited(own_armada):
    """A server of the test's own whose pods may have 48 processes and threads, and files of 1 MiB."""
    return own_armada({**cluster(node_set("amd64", cpu="2")), "podPidsLimit": PIDS_LIMIT, "podFileSizeLimit": "1Mi"})


def test_a_fork_bomb_is_stopped_at_the_pods_limit_and_fails_saying_so(
    limited, missing_part: Callable[[str], None]
) -> None:
    if os.geteuid() != 0:  # without a uid of its own the kernel would not hold the bomb back (RLIMIT_NPROC)
        missing_part("a fork bomb is held by RLIMIT_NPROC only under a server running as root")
    _, client = limited
    spec = pod(python(FORK_BOMB), memory="1Gi")
    spec.activeDeadlineSeconds = 30  # should the stop fail, the bomb (held at its limit) still ends
    job_id = submit_one(client, QUEUE, "bomb", item(spec))
    wait_for_state(client, job_id, submit_pb2.FAILED)
    error = job_error(client, job_id)
    assert f"the pod reached its limit of {PIDS_LIMIT} processes and threads (the cluster file's podPidsLimit)" in error


def test_a_file_written_past_the_file_size_limit_fails_the_container_naming_the_limit(limited) -> None:
    _, client = limited
    job_id = submit_one(client, QUEUE, "big", item(pod(["sh", "-c", "exec head -c 2097152 /dev/zero > big"])))
    wait_for_state(client, job_id, submit_pb2.FAILED)
    error = job_error(client, job_id)
    assert "failed with exit code 153" in error  # killed by SIGXFSZ, as a shell reports it
    assert "wrote past its file-size limit of 1048576 bytes" in error


def test_a_write_past_the_file_size_limit_stops_at_the_limit(limited) -> None:
    armada, client = limited
    write = "import os\ntry:\n    open('big', 'wb').write(bytes(2 << 20))\nexcept OSError as exc:\n    print(exc)"
    job_id = submit_one(client, QUEUE, "big", item(pod(python(write))))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED)
    assert armada.logs(job_id)[-1] == "[Errno 27] File too large"  # Python ignores SIGXFSZ: the write fails
    assert (armada.sandbox_of(job_id) / "big").stat().st_size == 1 << 20


def test_a_smaller_ephemeral_storage_lowers_the_file_size_limit(limited) -> None:
    _, client = limited
    spec = pod(["sh", "-c", "exec head -c 65536 /dev/zero > big"])
    for amounts in (spec.containers[0].resources.requests, spec.containers[0].resources.limits):
        amounts["ephemeral-storage"].string = "32Ki"
    job_id = submit_one(client, QUEUE, "small", item(spec))
    wait_for_state(client, job_id, submit_pb2.FAILED)
    assert "wrote past its file-size limit of 32768 bytes" in job_error(client, job_id)
