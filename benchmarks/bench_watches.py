"""Benchmark many concurrent watching event streams on the embedded Armada server.

Opens N watches (default 5,000) of one job set over one channel, waits until each has its first
event, then submits one more job and times until every watch has delivered its events. Also
times a unary call (GetQueue) while all watches wait, and counts the server process's threads:
watches are coroutines, so the count must not grow with N.

Prints one JSON object. Run: .venv/bin/python benchmarks/bench_watches.py [--watches N]
"""

from __future__ import annotations

import argparse
import json
import threading
import time

import grpc
from armada_client.armada import event_pb2, submit_pb2
from armada_client.client import ArmadaClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core
from armada_client.k8s.io.apimachinery.pkg.api.resource import generated_pb2 as resource

import armada_flyte  # noqa: F401  (aliases armada_client's google.api protos first)
from armada_flyte.embedded import EmbeddedArmada, EmbeddedConfig


def tiny_item() -> submit_pb2.JobSubmitRequestItem:
    quantities = {"cpu": resource.Quantity(string="10m"), "memory": resource.Quantity(string="16Mi")}
    container = core.Container(
        name="main",
        image="busybox",
        command=["true"],
        resources=core.ResourceRequirements(requests=quantities, limits=quantities),
    )
    return submit_pb2.JobSubmitRequestItem(namespace="default", pod_specs=[core.PodSpec(containers=[container])])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--watches", type=int, default=5000)
    watches = parser.parse_args().watches
    with EmbeddedArmada(EmbeddedConfig(queues=("bench",), paused=True)) as armada:
        channel = grpc.insecure_channel(armada.url)
        client = ArmadaClient(channel)
        client.submit_jobs("bench", "watched", [tiny_item()])
        threads_before = threading.active_count()
        request = event_pb2.JobSetRequest(queue="bench", id="watched", watch=True)
        started = time.monotonic()
        streams = [client.event_stub.GetJobSetEvents(request) for _ in range(watches)]
        first = sum(1 for stream in streams if next(stream).message.WhichOneof("events") == "submitted")
        opened = time.monotonic() - started
        call_started = time.monotonic()
        client.get_queue("bench")
        get_queue_ms = (time.monotonic() - call_started) * 1000
        threads_waiting = threading.active_count()
        job_id = client.submit_jobs("bench", "watched", [tiny_item()]).job_response_items[0].job_id
        fan_started = time.monotonic()
        delivered = 0
        for stream in streams:
            for message in stream:
                event = getattr(message.message, message.message.WhichOneof("events"))
                if event.job_id == job_id:
                    delivered += 1
                    break
        fan_out = time.monotonic() - fan_started
        for stream in streams:
            stream.cancel()
        channel.close()
    print(
        json.dumps(
            {
                "watches": watches,
                "watches_with_first_event": first,
                "open_all_seconds": round(opened, 2),
                "get_queue_ms_while_all_wait": round(get_queue_ms, 1),
                "new_event_delivered_to": delivered,
                "fan_out_seconds": round(fan_out, 2),
                "threads_before_watches": threads_before,
                "threads_while_watching": threads_waiting,
            }
        )
    )


if __name__ == "__main__":
    main()
