"""Memory limits as a container's memory cgroup enforces them: real pods over their limit end OOMKilled.

A cgroup charges a container for its processes' memory and for the tmpfs pages it writes (the pod's
/dev/shm, emptyDirs with medium Memory), and kills it with SIGKILL when the charge goes over the
limit: exit code 137, reason OOMKilled. Armada reports cause OOM (internal/executor/util/pod_status.go,
isOom) and, with its local executor config, failure category `oom` (internal/executor/categorizer,
_local/executor/config.yaml). Tests not marked `embedded_only` hold on a real cluster too.
"""

from __future__ import annotations

import pathlib
import uuid

import pytest
from armada_client.armada import event_pb2, submit_pb2
from armada_client.client import ArmadaClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core

from support.job_events import failed_event
from support.pods import item, pod, python, submit_one
from support.waiting import wait_for_state

FAILED, SUCCEEDED = submit_pb2.FAILED, submit_pb2.SUCCEEDED
MiB = 2**20


def assert_oom_killed(client: ArmadaClient, queue: str, job_set: str, job_id: str) -> None:
    wait_for_state(client, job_id, FAILED, timeout=60)
    event = failed_event(client, queue, job_set, job_id)
    assert event.cause == event_pb2.OOM
    assert event.failure_category == "oom"
    (status,) = event.container_statuses
    assert (status.reason, status.exitCode) == ("OOMKilled", 137)


def with_volume(spec: core.PodSpec, name: str, mount_path: str, medium: str = "") -> core.PodSpec:
    spec.volumes.append(
        core.Volume(name=name, volumeSource=core.VolumeSource(emptyDir=core.EmptyDirVolumeSource(medium=medium)))
    )
    spec.containers[0].volumeMounts.append(core.VolumeMount(name=name, mountPath=mount_path))
    return spec


def test_tail_of_dev_zero_is_oomkilled(client, queue, job_set):
    # Armada's basic/failure_oom_1x1: tail keeps every byte of a file without newlines.
    job_id = submit_one(client, queue, job_set, item(pod(["tail", "/dev/zero"], memory="25Mi")))
    assert_oom_killed(client, queue, job_set, job_id)


def test_writing_dev_shm_past_the_limit_is_oomkilled(client, queue, job_set):
    # Armada's categorization/oom: /dev/shm is the pod's tmpfs, charged to the container that writes it.
    fill = f"/dev/shm/fill-{uuid.uuid4().hex}"
    spec = pod(["sh", "-c", f"dd if=/dev/zero of={fill} bs=1M count=256"], memory="25Mi")
    job_id = submit_one(client, queue, job_set, item(spec))
    assert_oom_killed(client, queue, job_set, job_id)


def test_a_memory_emptydir_counts_toward_the_limit(client, queue, job_set):
    spec = with_volume(
        pod(["dd", "if=/dev/zero", "of=/cache/fill", "bs=1M", "count=96"], memory="32Mi"), "c", "/cache", "Memory"
    )
    job_id = submit_one(client, queue, job_set, item(spec))
    assert_oom_killed(client, queue, job_set, job_id)


def test_a_disk_emptydir_does_not_count_toward_the_limit(client, queue, job_set):
    spec = with_volume(pod(["dd", "if=/dev/zero", "of=/cache/fill", "bs=1M", "count=96"], memory="32Mi"), "c", "/cache")
    job_id = submit_one(client, queue, job_set, item(spec))
    wait_for_state(client, job_id, SUCCEEDED, timeout=60)


def test_dev_shm_within_the_limit_is_fine(client, queue, job_set):
    code = "open('/dev/shm/small', 'wb').write(b'x' * 2**20); assert len(open('/dev/shm/small', 'rb').read()) == 2**20"
    job_id = submit_one(client, queue, job_set, item(pod(python(code), memory="64Mi")))
    wait_for_state(client, job_id, SUCCEEDED, timeout=60)


def test_a_short_spike_over_the_limit_is_oomkilled(client, queue, job_set):
    # After a quiet second (the checks slow down), 100 MiB is faulted in by one mmap call and the process exits
    # at once: a cgroup kills it on the way; the shim by a check, or from the peak the kernel keeps (ru_maxrss).
    code = (
        "import mmap, os, time; time.sleep(1)\n"
        "mmap.mmap(-1, 100 * 2**20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE); os._exit(0)"
    )
    job_id = submit_one(client, queue, job_set, item(pod(python(code), memory="64Mi")))
    assert_oom_killed(client, queue, job_set, job_id)


def test_forked_processes_sharing_pages_are_charged_once(client, queue, job_set):
    # 60 MiB in the parent, shared copy-on-write with 3 children: 240 MiB of resident memory, 60 MiB charged.
    code = (
        "import os, sys\n"
        "block = b'x' * (60 * 2**20); children = []\n"
        "for _ in range(3):\n"
        "    r, w = os.pipe(); pid = os.fork()\n"
        "    if pid == 0:\n"
        "        import time; os.write(w, b'1'); time.sleep(0.5); os._exit(0)\n"
        "    os.close(w); os.read(r, 1); children.append(pid)\n"
        "sys.exit(max(os.waitpid(pid, 0)[1] for pid in children))\n"
    )
    job_id = submit_one(client, queue, job_set, item(pod(python(code), memory="160Mi")))
    wait_for_state(client, job_id, SUCCEEDED, timeout=60)


def test_a_small_command_fits_a_small_limit(client, queue, job_set):
    job_id = submit_one(client, queue, job_set, item(pod(["sh", "-c", "true"], memory="4Mi")))
    wait_for_state(client, job_id, SUCCEEDED, timeout=60)


@pytest.mark.embedded_only
def test_dev_shm_is_the_pods_own_and_a_fast_writer_is_stopped_early(embedded_armada, client, queue, job_set):
    name = f"fill-{uuid.uuid4().hex}"
    spec = pod(["sh", "-c", f"dd if=/dev/zero of=/dev/shm/{name} bs=1M count=256"], memory="25Mi")
    job_id = submit_one(client, queue, job_set, item(spec))
    assert_oom_killed(client, queue, job_set, job_id)
    assert not pathlib.Path("/dev/shm", name).exists()
    written = (embedded_armada.sandbox_of(job_id) / "dev/shm" / name).stat().st_size
    # The shim checks on every write into /dev/shm; dd writes 256 MiB in a fraction of a second.
    assert 16 * MiB < written < 128 * MiB  # its processes count too, so it may stop short of 25 MiB


@pytest.mark.embedded_only
def test_a_fast_grower_is_killed_near_its_limit(embedded_armada, client, queue, job_set):
    # It prints how much it holds after every 4 MiB; the checks speed up as it nears the limit.
    code = "import sys\nheld = []\nwhile True:\n    held.append(b'x' * (4 * 2**20)); print(len(held) * 4)\n"
    job_id = submit_one(client, queue, job_set, item(pod(python(code), memory="64Mi")))
    assert_oom_killed(client, queue, job_set, job_id)
    held = max(int(line) for line in embedded_armada.logs(job_id) if line.strip().isdigit())
    assert 48 <= held < 64 + 128
