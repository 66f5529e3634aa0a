"""The Kubernetes Services Armada creates for a job's `services:` entries.

Read from Armada's submit conversion (internal/server/submit/conversion/conversions.go,
`convertIngressesAndServices` and `createService`): the ports on offer are the main containers'
ports without a hostPort (and those of native-sidecar init containers), each named
`<container>-<port>`; every entry with at least one of its ports on offer becomes a Service
`armada-<job id>-0-service-<n>` (n counts the Services made), selecting the pod by its
`armada_job_id` label. A NodePort entry gets type NodePort and a cluster IP; every other one
(Headless) type ClusterIP with `clusterIP: None`. Custom names are off by default
(`AllowCustomServiceNames`), so they are not used. Ingress entries' Services are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from armada_client.armada import submit_pb2

from armada_flyte.cluster.pod_metadata import JOB_ID_LABEL


@dataclass(frozen=True)
class ServicePort:
    name: str
    port: int
    protocol: str


@dataclass(frozen=True)
class JobService:
    name: str
    type: str
    headless: bool
    ports: tuple[ServicePort, ...]
    selector: dict[str, str]


def job_services(job_id: str, item: Any, pod: Any) -> list[JobService]:
    """The Services Armada makes for the job's `services` entries, in order."""
    offered = _offered_ports(pod)
    made: list[JobService] = []
    for config in item.services:
        wanted = set(config.ports)
        ports = tuple(p for p in offered if p.port in wanted)
        if not ports:
            continue
        node_port = config.type == submit_pb2.ServiceType.NodePort
        made.append(
            JobService(
                name=f"armada-{job_id}-0-service-{len(made)}",
                type="NodePort" if node_port else "ClusterIP",
                headless=not node_port,
                ports=ports,
                selector={JOB_ID_LABEL: job_id},
            )
        )
    return made


def _offered_ports(pod: Any) -> list[ServicePort]:
    sidecars = [c for c in pod.initContainers if c.restartPolicy == "Always"]
    return [
        ServicePort(f"{container.name}-{port.containerPort}", port.containerPort, port.protocol or "TCP")
        for container in [*pod.containers, *sidecars]
        for port in container.ports
        if port.hostPort <= 0
    ]
