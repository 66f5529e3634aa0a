"""A local run interrupted by Ctrl-C (a real SIGINT to a `flyte.run` process) cancels its Armada jobs, and
says so in one line."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

from support.process_checks import is_alive

PROJECT = os.path.join(os.path.dirname(__file__), "project")

SCRIPT = textwrap.dedent(
    """
    import json, logging, sys
    import flyte
    import armada_flyte
    from armada_flyte.local.stack import LocalEndpoints

    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    config = json.loads(sys.argv[1])
    sys.path.insert(0, config["project"])
    import workflows

    stack = LocalEndpoints(config["armada_url"], config["blob_endpoint"], config["bucket"], config["queue"])
    armada_flyte.configure(**stack.connector_settings())
    stack.init_flyte(config["project"])
    flyte.with_runcontext(mode="local", raw_data_path=stack.raw_data_path).run(
        workflows.linger, pid_file=config["pid_file"]
    )
    """
)


def test_ctrl_c_during_a_sync_run_cancels_its_armada_job(stack, tmp_path):
    pid_file = tmp_path / "pid"
    config = {
        "project": PROJECT,
        "armada_url": stack.armada_url,
        "blob_endpoint": stack.blob_endpoint,
        "bucket": stack.bucket,
        "queue": stack.queue,
        "pid_file": str(pid_file),
    }
    log = tmp_path / "run.log"
    with log.open("w") as out:
        run = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, json.dumps(config)], stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path
        )
    try:
        deadline = time.monotonic() + 90
        while not (pid_file.exists() and pid_file.read_text()):
            assert run.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the job never started: " + log.read_text()
            time.sleep(0.05)
        run.send_signal(signal.SIGINT)
        run.wait(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    console = log.read_text()
    (job_id,) = re.findall(r"as Armada job (\w+)", console)
    job = stack.server.job(job_id)
    assert job is not None and job.state == "CANCELLED", console
    # One line says what happened, not a traceback of where the main thread was waiting.
    assert "Traceback" not in console and "ERROR" not in console, console
    assert console.rstrip().splitlines()[-1] == f"interrupted (Ctrl-C): cancelled Armada job {job_id}", console
    pod = int(pid_file.read_text())
    deadline = time.monotonic() + 30
    while is_alive(pod):
        assert time.monotonic() < deadline, f"the pod process {pod} of the interrupted run is still alive"
        time.sleep(0.05)
