"""A pod of the process pod runner stays in its sandbox and cannot read the server's environment; a pod of a
root server runs as a uid of its own and cannot read other pods' sandboxes and secrets, the server's state
folder or its user's home, and its secret files are gone once it ends."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import stat
import uuid
from typing import Callable, Iterator

import pytest
from armada_client.armada import submit_pb2
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core

from armada_flyte.pod_runner.pod_fence import PodFence

from support.pods import item, pod, python, submit_one, unique, with_secret_volume
from support.waiting import job_error, wait_for_state, wait_until

pytestmark = pytest.mark.embedded_only

WRITE_ARGV1 = "import os, sys; open(sys.argv[1], 'w').write('x'); print(os.path.realpath(sys.argv[1]))"
READ_ARGV1 = (
    "import sys\ntry:\n    print('read', open(sys.argv[1]).read())\n"
    "except OSError as exc:\n    print(type(exc).__name__)"
)
HOLD_UNTIL_ARGV1 = (
    "import os, sys, time\nopen('note', 'w').write('mine')\nprint('ready', flush=True)\n"
    "while not os.path.exists(sys.argv[1]): time.sleep(0.02)"
)


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


@pytest.fixture
def root_server(missing_part: Callable[[str], None]) -> None:
    """Pods have uids of their own only when the server runs as root (else they run as its user)."""
    if os.geteuid() != 0:
        missing_part("pods run as uids of their own only under a server running as root")


def read_as_a_pod(armada, client, queue, job_set, path: pathlib.Path) -> str:
    """What a pod gets reading `path`: 'read <content>', or the error's name."""
    _, lines = run(armada, client, queue, job_set, pod(python(READ_ARGV1), args=[str(path)]))
    return lines[-1]


@contextlib.contextmanager
def holding_pod(armada, client, queue, job_set, go: pathlib.Path, spec: core.PodSpec | None = None) -> Iterator[str]:
    """A pod (its note written in its sandbox) that runs until the test creates `go`; its job id."""
    spec = spec if spec is not None else pod(python(HOLD_UNTIL_ARGV1), args=[str(go)])
    job_id = submit_one(client, queue, job_set, item(spec))
    try:
        wait_until(lambda: "ready" in armada.logs(job_id), what=f"pod {job_id} to be ready")
        yield job_id
    finally:
        go.touch()
    wait_for_state(client, job_id, submit_pb2.SUCCEEDED)


def test_a_pod_runs_as_a_uid_of_its_own_that_alone_enters_its_sandbox(
    root_server, embedded_armada, client, queue, job_set
):
    probe = "import json, os; s = os.stat('.'); print(json.dumps([os.getuid(), os.getgid(), s.st_uid, s.st_mode]))"
    _, lines = run(embedded_armada, client, queue, job_set, pod(python(probe)))
    uid, gid, owner, mode = json.loads(lines[-1])
    assert PodFence().owns(uid) and gid == uid and owner == uid
    assert stat.S_IMODE(mode) == 0o700


def test_a_pod_cannot_read_another_pods_sandbox(root_server, embedded_armada, client, queue, job_set, pods_tmp_path):
    with holding_pod(embedded_armada, client, queue, job_set, pods_tmp_path / "go") as other:
        note = embedded_armada.sandbox_of(other) / "note"
        assert note.read_text() == "mine"
        assert read_as_a_pod(embedded_armada, client, queue, job_set, note) == "PermissionError"


def test_a_pod_cannot_read_another_pods_secret_files(
    root_server, embedded_armada, client, queue, job_set, pods_tmp_path
):
    secret = unique("fenced")
    embedded_armada.add_secret(secret, {"token": "other-pods-token"})
    go = pods_tmp_path / "go"
    spec = with_secret_volume(pod(python(HOLD_UNTIL_ARGV1), args=[str(go)]), secret, "/etc/creds")
    with holding_pod(embedded_armada, client, queue, job_set, go, spec) as other:
        token = embedded_armada.sandbox_of(other) / "etc/creds/token"
        assert token.read_text() == "other-pods-token"
        assert read_as_a_pod(embedded_armada, client, queue, job_set, token) == "PermissionError"


def test_secret_files_are_removed_when_the_pod_ends_and_its_sandbox_goes_back_to_root(
    root_server, embedded_armada, client, queue, job_set
):
    secret = unique("ended")
    embedded_armada.add_secret(secret, {"token": "short-lived"})
    spec = with_secret_volume(pod(python(READ_ARGV1), args=["/etc/creds/token"]), secret, "/etc/creds")
    job_id, lines = run(embedded_armada, client, queue, job_set, spec)
    assert lines[-1] == "read short-lived"
    sandbox = embedded_armada.sandbox_of(job_id)
    assert not (sandbox / "etc/creds/token").exists()
    assert (sandbox / "etc/creds").is_dir()  # the sandbox itself is kept for inspection
    assert (sandbox.stat().st_uid, stat.S_IMODE(sandbox.stat().st_mode)) == (0, 0o700)


def test_a_pod_cannot_read_the_servers_state_folder(root_server, own_armada, queue, job_set, pods_tmp_path):
    state = pods_tmp_path / "state"  # in a folder every uid may enter: the state folder's own mode must fence it
    armada, client = own_armada(state_dir=state)
    assert (state / "state.sqlite3").is_file()
    assert read_as_a_pod(armada, client, "conformance", job_set, state / "state.sqlite3") == "PermissionError"


def test_a_pod_cannot_read_the_home_of_the_servers_user(root_server, embedded_armada, client, queue, job_set):
    private = pathlib.Path.home() / f".armada-flyte-fence-{uuid.uuid4().hex}"
    private.write_text("the server user's")
    private.chmod(0o644)
    try:
        seen = read_as_a_pod(embedded_armada, client, queue, job_set, private)
    finally:
        private.unlink()
    assert seen in ("FileNotFoundError", "PermissionError")


def test_run_as_user_0_is_refused_on_a_root_server(root_server, embedded_armada, client, queue, job_set):
    spec = pod(python("import os; print(os.getuid())"))
    spec.containers[0].securityContext.runAsUser = 0
    job_id = submit_one(client, queue, job_set, item(spec))
    wait_for_state(client, job_id, submit_pb2.FAILED)
    assert "asks for securityContext.runAsUser 0" in job_error(client, job_id)


def test_another_run_as_user_runs_as_the_pods_own_uid_and_says_so(root_server, embedded_armada, client, queue, job_set):
    spec = pod(python("import os; print(os.getuid())"))
    spec.securityContext.runAsUser = 1000
    job_id, lines = run(embedded_armada, client, queue, job_set, spec)
    assert PodFence().owns(int(lines[-1]))
    assert "runAsUser was not followed" in embedded_armada.job(job_id).note
