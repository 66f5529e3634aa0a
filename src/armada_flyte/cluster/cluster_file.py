"""The simulated cluster the embedded server schedules onto (and `armada-flyte executor` offers), read from YAML.

A node set is a set of identical simulated nodes (the cluster file's `node_sets:`; `node_groups:`, the
old spelling, is read too): a name, a node count, labels (with
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
    AliasChoices,
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
MAX_NODES_PER_SET = 1000
MAX_NODES = 5000
"""Each simulated node is an object in the server's memory; real test clusters are far smaller."""
DEFAULT_EXECUTOR = "embedded"
"""The executor (Armada's cluster id) the nodes belong to when the cluster file names none."""
_KNOWN_KEYS = (
    "executor, pool, namespaces, errorCategories, images, imagePullFailureGraceSeconds, cpuShares, podPidsLimit, "
    "podFileSizeLimit, podUidBase, podUidCount, node_sets (or node_groups, the old spelling); "
    "per node set: name, nodes, labels, taints, allocatable; per image: image, path, entrypoint, cmd"
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


class NodeSet(BaseModel):
    """One set of identical simulated nodes, as the cluster file describes it (not the connector's
    node groups, which are per-architecture placement rules)."""

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
            raise ValueError(f"node set names become node names: {problem}")
        return name

    @field_validator("nodes")
    @classmethod
    def _nodes(cls, nodes: int) -> int:
        if nodes < 1:
            raise ValueError("give each node set at least 1 node (or remove the set)")
        if nodes > MAX_NODES_PER_SET:
            raise ValueError(f"the embedded server simulates at most {MAX_NODES_PER_SET} nodes per node set")
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
        """One line for people: size, labels, taints and resources of the node set."""
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
    node_sets: List[NodeSet] = Field(validation_alias=AliasChoices("node_sets", "node_groups"))
    """`node_groups` is the old spelling, still read."""

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
    def _node_sets(self) -> _ClusterFile:
        if not self.node_sets:
            raise ValueError("list at least one node set under node_sets")
        names = [g.name for g in self.node_sets]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"node set names must be unique; rename the repeated {', '.join(repeated)}")
        if sum(g.nodes for g in self.node_sets) > MAX_NODES:
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
    """One simulated node: its node set's labels and taints plus its own hostname."""

    index: int
    name: str
    node_set: NodeSet
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    allocatable: Mapping[str, int] = field(repr=False)
    executor: str = DEFAULT_EXECUTOR
    """The Armada executor (cluster id) that runs the node's pods."""


class Cluster:
    """All nodes of one pool, in node-set order (`<node set>-<n>` names)."""

    def __init__(
        self,
        node_sets: List[NodeSet],
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
        """Whether the process pod runner weighs containers' CPU time by their cpu requests (Kubernetes' cpu.shares)."""
        self.images = images
        """The images the nodes hold (the process pod runner runs only those); None: any image runs on the host."""
        self.error_categories = error_categories
        """How its executor categorizes failed pods (Armada's executor `errorCategories`)."""
        self.namespaces = frozenset([*BUILT_IN_NAMESPACES, *namespaces])
        self.node_sets = list(node_sets)
        self.nodes: list[Node] = []
        for node_set in self.node_sets:
            for n in range(node_set.nodes):
                name = f"{node_set.name}-{n}"
                labels = {**node_set.labels, HOSTNAME_LABEL: name}
                node = Node(
                    len(self.nodes),
                    name,
                    node_set,
                    labels,
                    tuple(node_set.taints),
                    _with_disk(node_set.capacity),
                    executor,
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
            spec.node_sets,
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
        """An amd64 node set and an arm64 node set tainted `kubernetes.io/arch=arm64:NoSchedule`."""
        return cls.from_yaml(DEFAULT_CLUSTER_FILE)

    def has_namespace(self, name: str) -> bool:
        """Whether pods can be created in `name` (a pod in any other namespace fails, as on a cluster)."""
        return name in self.namespaces

    def node_set(self, name: str) -> NodeSet:
        return next(g for g in self.node_sets if g.name == name)


def _with_disk(capacity: dict[str, int]) -> dict[str, int]:
    return {"ephemeral-storage": milli(DEFAULT_EPHEMERAL_STORAGE), **capacity}
