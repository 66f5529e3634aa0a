"""Jobs that hold a node group's whole capacity, so the next job of that group has to wait."""

from __future__ import annotations

import uuid
from typing import Iterator

from armada_client.client import ArmadaClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1
from armada_client.k8s.io.apimachinery.pkg.api.resource import generated_pb2 as resource

from armada_flyte.armada_names import JobState

from support.waiting import wait_for_state


def fill_group(
    client: ArmadaClient, queue: str, architecture: str, nodes: int = 2, cpu: str = "4"
) -> Iterator[list[str]]:
    """Run one sleeper of `cpu` cpu on each of the group's `nodes` nodes (the default cluster: 2 of 4 cpu);
    yields their ids once they run, and cancels them afterwards."""
    job_set = f"blockers-{uuid.uuid4().hex[:8]}"
    amount = {"cpu": resource.Quantity(string=cpu), "memory": resource.Quantity(string="1Gi")}
    pod = core_v1.PodSpec(
        nodeSelector={"kubernetes.io/arch": architecture},
        tolerations=[
            core_v1.Toleration(key="kubernetes.io/arch", operator="Equal", value=architecture, effect="NoSchedule")
        ],
        containers=[
            core_v1.Container(
                name="blocker",
                image="busybox",
                command=["sleep", "600"],
                resources=core_v1.ResourceRequirements(requests=amount, limits=amount),
            )
        ],
    )
    items = [client.create_job_request_item(priority=1, namespace="default", pod_spec=pod) for _ in range(nodes)]
    ids = [item.job_id for item in client.submit_jobs(queue, job_set, items).job_response_items]
    try:
        for job_id in ids:
            wait_for_state(client, job_id, JobState.RUNNING, timeout=120)  # real Armada, loaded: cycles and leases
        yield ids
    finally:
        client.cancel_jobset(queue, job_set, [])
