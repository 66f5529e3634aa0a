"""A local run interrupted by Ctrl-C or stopped by SIGTERM (a real signal to a `flyte.run` process)
cancels its Armada jobs, on the embedded server and on real Armada (`--armada real`); Ctrl-C says so
in one line."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from armada_client.armada import job_pb2, job_pb2_grpc, submit_pb2

from support.armada_channels import armada_channel
from support.process_checks import is_alive
from support.waiting import wait_until

PROJECT = os.path.join(os.path.dirname(__file__), "project")

SCRIPT = textwrap.dedent(
    """
    import json, logging, signal, sys
    import flyte

    # Ctrl-C as a terminal delivers it, however the test was started (a background job inherits SIGINT ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import armada_flyte
    from armada_flyte.local.stack import LocalEndpoints

    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    config = json.loads(sys.argv[1])
    sys.path.insert(0, config["project"])
    import workflows

    if config["hold_exit"]:
        # The exit waits (bounded) until the run's own wait has seen its job cancelled and gone quiet, so a
        # run that would rather raise (and have Flyte log a failure after the Ctrl-C line) gets the time to.
        import atexit, threading
        import armada_flyte.local.run as local_run

        gone_quiet, quiet = threading.Event(), local_run._quiet_until_exit

        async def noted_quiet():
            gone_quiet.set()
            await quiet()

        local_run._quiet_until_exit = noted_quiet
        atexit.register(gone_quiet.wait, 20)  # within run.wait(timeout=60) below

    stack = LocalEndpoints(config["armada_url"], config["blob_endpoint"], config["bucket"], config["queue"])
    armada_flyte.configure(**stack.connector_settings())
    stack.init_flyte(config["project"])
    flyte.with_runcontext(mode="local", raw_data_path=stack.raw_data_path).run(
        workflows.linger, pid_file=config["pid_file"]
    )
    """
)


def armada_state(armada_url: str, job_id: str) -> int:
    with armada_channel(armada_url) as channel:
        request = job_pb2.JobStatusRequest(job_ids=[job_id])
        return job_pb2_grpc.JobsStub(channel).GetJobStatus(request, timeout=30).job_states[job_id]


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_sync_run_stopped_by_a_signal_cancels_its_armada_job(stack, tmp_path, pods_tmp_path, stop, armada_logs):
    pid_file = pods_tmp_path / "pid"  # the task writes it
    config = {
        "project": PROJECT,
        "armada_url": stack.armada_url,
        "blob_endpoint": stack.blob_endpoint,
        "bucket": stack.bucket,
        "queue": stack.queue,
        "pid_file": str(pid_file),
        "hold_exit": stop == signal.SIGINT,
    }
    log = tmp_path / "run.log"
    with log.open("w") as out:
        run = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, json.dumps(config)], stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path
        )
    try:
        deadline = time.monotonic() + 180  # a bed with Kubernetes on a busy machine: a minute and more to a pod
        while not (pid_file.exists() and pid_file.read_text()):
            assert run.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the job never started: " + log.read_text()
            time.sleep(0.05)
        run.send_signal(stop)
        try:
            run.wait(timeout=60)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the run did not end within 60 s of {stop.name}: {log.read_text()}") from None
    finally:
        if run.poll() is None:
            run.kill()
    (job_id,) = re.findall(r"as Armada job (\w+)", log.read_text())
    assert f"cancelled Armada job {job_id}" in log.read_text(), log.read_text()
    wait_until(
        lambda: armada_state(stack.armada_url, job_id) == submit_pb2.CANCELLED,
        30,
        f"Armada to report job {job_id} cancelled; the run's log:\n{log.read_text()}\n{armada_logs()}",
    )
    if stop == signal.SIGINT:  # one line says what happened, not a traceback of where the main thread waited
        console = log.read_text()
        assert "Traceback" not in console and "ERROR" not in console, console
        assert console.rstrip().splitlines()[-1] == f"interrupted (Ctrl-C): cancelled Armada job {job_id}", console
    pod = int(pid_file.read_text())
    deadline = time.monotonic() + 30
    while is_alive(pod):
        assert time.monotonic() < deadline, f"the pod process {pod} of the interrupted run is still alive"
        time.sleep(0.05)
