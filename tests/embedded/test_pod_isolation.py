"""A pod of the process executor stays in its sandbox and cannot read the server's environment."""

from __future__ import annotations

import json
import os
import uuid

import pytest
from armada_client.armada import submit_pb2
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core

from support.pods import item, pod, python, submit_one
from support.waiting import wait_for_state

pytestmark = pytest.mark.embedded_only

WRITE_ARGV1 = "import os, sys; open(sys.argv[1], 'w').write('x'); print(os.path.realpath(sys.argv[1]))"


def run(embedded_armada, client, queue, job_set, spec) -> tuple[str, list[str]]:
    job_id = submit_one(client, queue, job_set, item(spec))
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED, timeout=30)
    return job_id, embedded_armada.logs(job_id)


def test_dot_dots_in_args_stay_inside_the_sandbox(embedded_armada, client, queue, job_set):
    name = f"escape-{uuid.uuid4().hex}"
    spec = pod(python(WRITE_ARGV1), args=[f"/opt/flyte/../../../../../../tmp/{name}"])
    job_id, lines = run(embedded_armada, client, queue, job_set, spec)
    sandbox = embedded_armada.sandbox_of(job_id)
    assert not os.path.exists(f"/tmp/{name}")
    assert lines[-1] == str(sandbox / "tmp" / name)


def test_a_working_dir_with_dot_dots_stays_inside_the_sandbox(embedded_armada, client, queue, job_set):
    spec = pod(python("import os; print(os.getcwd())"), working_dir="/../../../../etc")
    job_id, lines = run(embedded_armada, client, queue, job_set, spec)
    assert lines[-1] == str(embedded_armada.sandbox_of(job_id) / "etc")


def test_a_volume_sub_path_with_dot_dots_stays_inside_the_sandbox(embedded_armada, client, queue, job_set):
    spec = pod(python(WRITE_ARGV1), args=["/data/file"])
    spec.volumes.append(core.Volume(name="v", volumeSource=core.VolumeSource(emptyDir=core.EmptyDirVolumeSource())))
    spec.containers[0].volumeMounts.append(core.VolumeMount(name="v", mountPath="/data", subPath="../../../../.."))
    job_id, lines = run(embedded_armada, client, queue, job_set, spec)
    sandbox = embedded_armada.sandbox_of(job_id)
    assert lines[-1].startswith(str(sandbox) + "/")


def test_a_pod_cannot_read_the_servers_environment(embedded_armada, client, queue, job_set):
    server = os.getpid()  # the embedded server runs in this test process
    probe = (
        "import json, os, sys\n"
        "def read(pid):\n"
        "    try:\n"
        "        return open(f'/proc/{pid}/environ', 'rb').read().decode(errors='replace')\n"
        "    except OSError as exc:\n"
        "        return type(exc).__name__\n"
        "print(json.dumps({'ppid': os.getppid(), 'server': read(int(sys.argv[1])), 'parent': read(os.getppid())}))"
    )
    _, lines = run(embedded_armada, client, queue, job_set, pod(python(probe), args=[str(server)]))
    seen = json.loads(lines[-1])
    assert seen["ppid"] != server  # the pod's parent is its container shim, not the server
    assert seen["server"] == "PermissionError"
    # The shim's environment is the pod's own: none of the server's variables are in it.
    own = {"PATH", "LANG", "LC_ALL", "TZ", "HOME", "TMPDIR", "HOSTNAME", "PYTHONUNBUFFERED"}  # the pod sets these
    leaked = {name for name, value in os.environ.items() if f"{name}={value}" in seen["parent"]} - own
    assert not leaked
