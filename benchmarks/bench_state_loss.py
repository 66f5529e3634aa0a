"""What a `kill -9` of `armada-flyte dev` loses of the jobs it had acknowledged (its state is written behind).

Each round starts `armada-flyte dev --paused` (nothing runs, so the writer only has submissions to
write) on a fresh state folder, submits from `--threads` threads as fast as the server answers
(SubmitJobs of 100 items), SIGKILLs the server after `--seconds`, and reads the state file:
every acknowledged job missing from it was lost. It reports, per round, how many were acknowledged
and lost, and how long before the kill the oldest lost one had been acknowledged; that age is the
write-behind's window. Target: under 250 ms (a batch gathers for 20 ms and is written while the next gathers).
Prints one JSON object.
Run: .venv/bin/python benchmarks/bench_state_loss.py [--rounds 5] [--seconds 3] [--threads 4]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile
import threading
import time

import grpc
from armada_client.client import ArmadaClient

import armada_flyte  # noqa: F401  (aliases armada_client's google.api protos first)
from armada_flyte.embedded.store.state_file import saved_job_states

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from bench_embedded_backlog import items  # noqa: E402

TARGET_MS = 250.0


def one_round(folder: pathlib.Path, seconds: float, threads: int) -> dict:
    state = folder / "state"
    command = [sys.executable, "-m", "armada_flyte.admin.cli", "dev", "--paused", "--port", "0", "--no-blob-store"]
    command += ["--no-view", "--queue", "bench", "--state-dir", str(state)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = ""
        for line in process.stdout:
            if found := re.search(r"listening on (127\.0\.0\.1:\d+)", line):
                url = found.group(1)
            if "Press Ctrl-C" in line:
                break
        acknowledged: list[tuple[float, str]] = []
        stop = threading.Event()

        def submit() -> None:
            with grpc.insecure_channel(url) as channel:
                client = ArmadaClient(channel)
                request = items(client, "100m")
                while not stop.is_set():
                    try:
                        answer = client.submit_jobs("bench", "loss", request)
                    except grpc.RpcError as exc:
                        if exc.code() == grpc.StatusCode.UNAVAILABLE:
                            return  # the kill
                        raise
                    at = time.monotonic()
                    acknowledged.extend((at, item.job_id) for item in answer.job_response_items)

        workers = [threading.Thread(target=submit) for _ in range(threads)]
        for worker in workers:
            worker.start()
        time.sleep(seconds)
        killed_at = time.monotonic()
        process.kill()
        process.wait()
        stop.set()
        for worker in workers:
            worker.join()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    saved = saved_job_states(state)
    lost = [at for at, job_id in acknowledged if job_id not in saved and at <= killed_at]
    return {
        "acknowledged": len(acknowledged),
        "per_second": round(len(acknowledged) / seconds),
        "lost": len(lost),
        "oldest_lost_ms_before_kill": round((killed_at - min(lost)) * 1000, 1) if lost else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    rounds = []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="bench-state-loss-") as folder:
            rounds.append(one_round(pathlib.Path(folder), args.seconds, args.threads))
    window = max(r["oldest_lost_ms_before_kill"] for r in rounds)
    print(
        json.dumps(
            {
                "rounds": rounds,
                "most_lost": max(r["lost"] for r in rounds),
                "longest_window_ms": window,
                "target_ms": TARGET_MS,
                "meets_target": window < TARGET_MS,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
