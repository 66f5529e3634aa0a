"""What a task asks of accelerators: the GPU model, count and MIG partition Flyte serialised, and the
memory-backed /dev/shm it wants. Pure: read from the template; the pod-spec entries they become.

Flyte writes `flyte.Resources(gpu="A100:1")` as a GPU count in the container's resources plus
`extended_resources.gpu_accelerator` (device `nvidia-tesla-a100`, optional partition); `shm=` becomes
`extended_resources.shared_memory`. Flyte's pod plugin turns them into node selection, tolerations
and an emptyDir volume (flytek8s/pod_helper.go); the connector does the same from the node-group file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from armada_flyte.errors import InvalidConfig
from armada_flyte.kube import parse_quantity

GPU_RESOURCE = "nvidia.com/gpu"
"""The resource Flyte's GPU count is requested in (the connector renames it for other device classes)."""

_DEVICE_CLASSES = {0: "NVIDIA_GPU", 1: "GOOGLE_TPU", 2: "AMAZON_NEURON", 3: "AMD_GPU", 4: "HABANA_GAUDI"}


@dataclass(frozen=True)
class AcceleratorRequest:
    """The accelerator part of one task: count (0: none), device (empty: any), partition choice."""

    count: str = ""
    device: str = ""
    device_class: str = "NVIDIA_GPU"
    partition: str = ""
    unpartitioned: bool = False

    @property
    def wanted(self) -> bool:
        return bool(self.device) or _positive(self.count)


@dataclass(frozen=True)
class SharedMemory:
    """A memory-backed emptyDir mounted at `mount_path` (size_limit empty: no limit, as `shm="auto"`)."""

    mount_path: str
    mount_name: str
    size_limit: str = ""


def accelerator_request(task_template: Any, gpu_count: str) -> AcceleratorRequest:
    """The template's accelerator, with the GPU count read from its container resources."""
    extended = task_template.extended_resources if task_template.HasField("extended_resources") else None
    if extended is None or not extended.HasField("gpu_accelerator"):
        return AcceleratorRequest(count=gpu_count)
    accelerator = extended.gpu_accelerator
    which = accelerator.WhichOneof("partition_size_value")
    device_class = _DEVICE_CLASSES.get(accelerator.device_class, "NVIDIA_GPU")
    return AcceleratorRequest(
        count=gpu_count or "1",  # flyte.GPU(...) always carries a count; a device alone means one
        device=accelerator.device,
        device_class=device_class,
        partition=accelerator.partition_size if which == "partition_size" else "",
        unpartitioned=which == "unpartitioned" and accelerator.unpartitioned,
    )


def shared_memory(task_template: Any) -> Optional[SharedMemory]:
    extended = task_template.extended_resources if task_template.HasField("extended_resources") else None
    if extended is None or not extended.HasField("shared_memory"):
        return None
    shm = extended.shared_memory
    if shm.size_limit:
        try:
            parse_quantity(shm.size_limit)
        except ValueError as exc:
            raise InvalidConfig("flyte.Resources.shm", shm.size_limit, str(exc)) from None
    return SharedMemory(shm.mount_path or "/dev/shm", shm.mount_name or "flyte-shm", shm.size_limit)


def shared_memory_entries(
    shm: SharedMemory, volumes: list[dict[str, Any]], mounts: list[dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The memory-backed volume and its mount, refused when the pod already has a volume of its name or a
    mount at its path (`volumes`, `mounts`: the pod's others)."""
    if any(v.get("name") == shm.mount_name for v in volumes):
        raise InvalidConfig(
            "pod_template.volumes", shm.mount_name, "a volume already has the shared-memory volume's name; rename it"
        )
    if any(m.get("mountPath") == shm.mount_path for m in mounts):
        raise InvalidConfig(
            "pod_template.volumeMounts",
            shm.mount_path,
            "the pod template already mounts something there; drop that mount or flyte.Resources(shm=...)",
        )
    empty_dir: dict[str, Any] = {"medium": "Memory"}
    if shm.size_limit:
        empty_dir["sizeLimit"] = {"string": shm.size_limit}
    volume = {"name": shm.mount_name, "volumeSource": {"emptyDir": empty_dir}}
    return volume, {"name": shm.mount_name, "mountPath": shm.mount_path}


def counted_in(resources: dict[str, dict[str, str]], resource: str) -> dict[str, dict[str, str]]:
    """The container's resources with the GPUs counted in `resource` (amd.com/gpu, google.com/tpu, ...)
    instead of nvidia.com/gpu; fresh dicts either way."""
    return {
        kind: {(resource if name == GPU_RESOURCE else name): value for name, value in values.items()}
        for kind, values in resources.items()
    }


def _positive(count: str) -> bool:
    try:
        return bool(count) and parse_quantity(count) > 0
    except ValueError:
        return False
