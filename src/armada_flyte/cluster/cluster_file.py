"""The simulated cluster the embedded server schedules onto (and `armada-flyte executor` offers), read from YAML.

A node group is a set of identical nodes: a name, a node count, labels (with
`kubernetes.io/arch`), taints and allocatable resources. Each node also carries
`kubernetes.io/hostname`, as a kubelet registers it, so pods select nodes exactly as on
Kubernetes. Mistakes fail at load time with the field and the fix.
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass, field
from typing import Annotated, Any, Dict, Iterable, List, Mapping, Optional, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from armada_flyte.cluster.error_categories import ErrorCategories
from armada_flyte.config_file import read_yaml
from armada_flyte.errors import invalid_config_from
from armada_flyte.kube import (
    ARCH_LABEL,
    dns_label_problem,
    format_milli,
    label_key_problem,
    label_value_problem,
    milli,
    quantity_in_range,
)
from armada_flyte.kube_objects import Taint
from armada_flyte.pod_runner.images import PULL_FAILURE_GRACE_SECONDS, ImageCatalogue, ImageEntry
from armada_flyte.pod_runner.pod_fence import (
    DEFAULT_FILE_SIZE_LIMIT,
    DEFAULT_PIDS_LIMIT,
    DEFAULT_UID_BASE,
    DEFAULT_UID_COUNT,
    FIRST_POD_UID,
    LAST_POD_UID,
    PodFence,
)

HOSTNAME_LABEL = "kubernetes.io/hostname"
DEFAULT_CLUSTER_FILE = pathlib.Path(__file__).with_name("default_cluster.yaml")
_REQUIRED_RESOURCES = ("cpu", "memory")
DEFAULT_EPHEMERAL_STORAGE = "1Ti"
"""A node's local disk when the cluster file names none: every Kubernetes node reports one, and
Armada gives every container 8Gi of it by default, so it must be there to schedule anything."""
MAX_NODES_PER_GROUP = 1000
MAX_NODES = 5000
"""Each simulated node is an object in the server's memory; real test clusters are far smaller."""
DEFAULT_EXECUTOR = "embedded"
"""The executor (Armada's cluster id) the nodes belong to when the cluster file names none."""
_KNOWN_KEYS = (
    "executor, pool, namespaces, errorCategories, images, imagePullFailureGraceSeconds, cpuShares, podPidsLimit, "
    "podFileSizeLimit, podUidBase, podUidCount, node_groups; "
    "per group: name, nodes, labels, taints, allocatable; per image: image, path, entrypoint, cmd"
)
BUILT_IN_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
"""The namespaces every Kubernetes cluster has; a cluster file's `namespaces` adds to them."""


def _not_a_bool(quantity: Any) -> Any:
    if isinstance(quantity, bool):
        raise ValueError(f"{quantity!r} is not a quantity; write an amount such as 4 or 16Gi")
    return quantity


def _in_range(quantity: Union[str, int, float]) -> Union[str, int, float]:
    quantity_in_range(quantity)
    return quantity


AllocatableAmount = Annotated[Union[str, int, float], BeforeValidator(_not_a_bool), AfterValidator(_in_range)]
"""One resource's amount per node, a Kubernetes quantity within Kubernetes' range (errors name its key)."""


def _bytes(quantity: Union[str, int, float]) -> int:
    amount = -(-milli(quantity) // 1000)
    if amount < 1:
        raise ValueError(f"{quantity!r} must be at least 1 byte, e.g. 8Gi")
    return amount


ByteAmount = Annotated[
    Union[str, int, float], BeforeValidator(_not_a_bool), AfterValidator(_in_range), AfterValidator(_bytes)
]
"""A number of bytes, written as a Kubernetes quantity (8Gi, 500M or 1048576)."""


class ClusterNodeGroup(BaseModel):
    """One group of identical nodes, as the cluster file describes it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    nodes: int
    labels: Dict[str, str]
    taints: List[Taint] = []
    allocatable: Dict[str, AllocatableAmount]

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if problem := dns_label_problem(name):
            raise ValueError(f"node group names become node names: {problem}")
        return name

    @field_validator("nodes")
    @classmethod
    def _nodes(cls, nodes: int) -> int:
        if nodes < 1:
            raise ValueError("give each node group at least 1 node (or remove the group)")
        if nodes > MAX_NODES_PER_GROUP:
            raise ValueError(f"the embedded server simulates at most {MAX_NODES_PER_GROUP} nodes per group")
        return nodes

    @field_validator("labels")
    @classmethod
    def _labels(cls, labels: Dict[str, str]) -> Dict[str, str]:
        for key, value in labels.items():
            if problem := label_key_problem(key) or label_value_problem(value):
                raise ValueError(f"label {key!r}: {problem}")
        if ARCH_LABEL not in labels:
            raise ValueError(f"add the label {ARCH_LABEL} (amd64 or arm64): pods pick architectures by it")
        if HOSTNAME_LABEL in labels:
            raise ValueError(f"remove {HOSTNAME_LABEL}: every node gets its own name as that label")
        return labels

    @field_validator("allocatable")
    @classmethod
    def _allocatable(cls, allocatable: Dict[str, Any]) -> Dict[str, Any]:
        for name in _REQUIRED_RESOURCES:
            if name not in allocatable:
                raise ValueError(f'add allocatable {name} per node, e.g. cpu: "4", memory: 16Gi')
        for name, quantity in allocatable.items():
            if milli(quantity) <= 0:
                raise ValueError(f"{name}: allocatable {quantity!r} must be more than 0")
        return allocatable

    @property
    def architecture(self) -> str:
        return self.labels[ARCH_LABEL]

    @property
    def capacity(self) -> dict[str, int]:
        """Allocatable resources of one node, in thousandths."""
        return {name: milli(quantity) for name, quantity in self.allocatable.items()}

    def describe(self) -> str:
        """One line for people: size, labels, taints and resources of the group."""
        labels = ", ".join(f"{k}={v}" for k, v in self.labels.items())
        taints = ", ".join(str(t) for t in self.taints) or "none"
        per_node = ", ".join(f"{name} {format_milli(name, amount)}" for name, amount in self.capacity.items())
        plural = "s" if self.nodes != 1 else ""
        return f"{self.name}: {self.nodes} node{plural} ({per_node} each); labels {labels}; taints {taints}"


class _ClusterFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    executor: str = DEFAULT_EXECUTOR
    pool: str = "default"
    namespaces: List[str] = []
    errorCategories: ErrorCategories = ErrorCategories()
    images: Optional[List[ImageEntry]] = None
    imagePullFailureGraceSeconds: float = Field(PULL_FAILURE_GRACE_SECONDS, ge=0, le=3600)
    cpuShares: bool = False
    podPidsLimit: int = Field(DEFAULT_PIDS_LIMIT, ge=1, le=4194304)
    podFileSizeLimit: ByteAmount = DEFAULT_FILE_SIZE_LIMIT
    podUidBase: int = Field(DEFAULT_UID_BASE, ge=FIRST_POD_UID, le=LAST_POD_UID)
    podUidCount: int = Field(DEFAULT_UID_COUNT, ge=1, validate_default=True)
    node_groups: List[ClusterNodeGroup]

    @field_validator("executor")
    @classmethod
    def _executor(cls, executor: str) -> str:
        if not executor:
            raise ValueError("name the executor (Armada's cluster id), e.g. local-cluster, or leave the key out")
        if problem := label_value_problem(executor):
            raise ValueError(f"executor {executor!r}: {problem}")
        return executor

    @field_validator("namespaces")
    @classmethod
    def _namespaces(cls, namespaces: List[str]) -> List[str]:
        for name in namespaces:
            if problem := dns_label_problem(name):
                raise ValueError(f"namespace {name!r}: {problem}")
        return namespaces

    @model_validator(mode="after")
    def _groups(self) -> _ClusterFile:
        if not self.node_groups:
            raise ValueError("list at least one node group under node_groups")
        names = [g.name for g in self.node_groups]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"node group names must be unique; rename the repeated {', '.join(repeated)}")
        if sum(g.nodes for g in self.node_groups) > MAX_NODES:
            raise ValueError(f"the embedded server simulates at most {MAX_NODES} nodes in all; use fewer")
        return self

    @field_validator("podUidCount")
    @classmethod
    def _pod_uids(cls, count: int, info: ValidationInfo) -> int:
        base = info.data.get("podUidBase", DEFAULT_UID_BASE)
        if base + count - 1 > LAST_POD_UID:
            raise ValueError(f"podUidBase {base} + podUidCount - 1 must stay at most {LAST_POD_UID}; give fewer")
        return count

    def fence(self) -> PodFence:
        return PodFence(int(self.podPidsLimit), int(self.podFileSizeLimit), self.podUidBase, self.podUidCount)


@dataclass(frozen=True)
class Node:
    """One simulated node: its group's labels and taints plus its own hostname."""

    index: int
    name: str
    group: ClusterNodeGroup
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    allocatable: Mapping[str, int] = field(repr=False)
    executor: str = DEFAULT_EXECUTOR
    """The Armada executor (cluster id) that runs the node's pods."""


class Cluster:
    """All nodes of one pool, in node-group order (`<group>-<n>` names)."""

    def __init__(
        self,
        node_groups: List[ClusterNodeGroup],
        pool: str = "default",
        namespaces: Iterable[str] = (),
        error_categories: ErrorCategories = ErrorCategories(),
        images: Optional[ImageCatalogue] = None,
        cpu_shares: bool = False,
        executor: str = DEFAULT_EXECUTOR,
        pod_fence: PodFence = PodFence(),
    ):
        self.executor = executor
        self.pod_fence = pod_fence
        """The pods' limits and (process pods of a root server) uids."""
        self.pool = pool
        self.cpu_shares = cpu_shares
        """Whether the process executor weighs containers' CPU time by their cpu requests (Kubernetes' cpu.shares)."""
        self.images = images
        """The images the nodes hold (the process executor runs only those); None: any image runs on the host."""
        self.error_categories = error_categories
        """How its executor categorizes failed pods (Armada's executor `errorCategories`)."""
        self.namespaces = frozenset([*BUILT_IN_NAMESPACES, *namespaces])
        self.node_groups = list(node_groups)
        self.nodes: list[Node] = []
        for group in self.node_groups:
            for n in range(group.nodes):
                name = f"{group.name}-{n}"
                labels = {**group.labels, HOSTNAME_LABEL: name}
                node = Node(
                    len(self.nodes), name, group, labels, tuple(group.taints), _with_disk(group.capacity), executor
                )
                self.nodes.append(node)
        self.total: dict[str, int] = {}
        for node in self.nodes:
            for name, amount in node.allocatable.items():
                self.total[name] = self.total.get(name, 0) + amount

    @classmethod
    def from_mapping(cls, data: Any, origin: str = "cluster file", base: pathlib.Path | None = None) -> Cluster:
        """`base` is the folder image program folders are relative to (the cluster file's; default: the current one)."""
        try:
            spec = _ClusterFile.model_validate(data)
        except ValidationError as exc:
            raise invalid_config_from(exc, origin, known=_KNOWN_KEYS) from None
        images = None
        if spec.images is not None:
            folder = base if base is not None else pathlib.Path.cwd()
            images = ImageCatalogue.from_entries(spec.images, folder, spec.imagePullFailureGraceSeconds, origin)
        return cls(
            spec.node_groups,
            spec.pool,
            spec.namespaces,
            spec.errorCategories,
            images,
            spec.cpuShares,
            spec.executor,
            spec.fence(),
        )

    @classmethod
    def from_yaml(cls, path: str | pathlib.Path) -> Cluster:
        data = read_yaml(path, "cluster", "pass a cluster YAML (see docs/embedded-server.md)")
        return cls.from_mapping(data, str(path), pathlib.Path(path).resolve().parent)

    @classmethod
    def default(cls) -> Cluster:
        """An amd64 group and an arm64 group tainted `kubernetes.io/arch=arm64:NoSchedule`."""
        return cls.from_yaml(DEFAULT_CLUSTER_FILE)

    def has_namespace(self, name: str) -> bool:
        """Whether pods can be created in `name` (a pod in any other namespace fails, as on a cluster)."""
        return name in self.namespaces

    def group(self, name: str) -> ClusterNodeGroup:
        return next(g for g in self.node_groups if g.name == name)


def _with_disk(capacity: dict[str, int]) -> dict[str, int]:
    return {"ephemeral-storage": milli(DEFAULT_EPHEMERAL_STORAGE), **capacity}
