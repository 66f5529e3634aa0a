"""Read a YAML configuration file, failing with an error that names the setting and the fix.

Every configuration file (the node-group file, the embedded server's cluster file, the connector's
settings file) is read here, by a loader that refuses what no configuration needs and an attacker
or an accident can produce: anchors expanded into millions of nodes ("billion laughs"), nesting
deep enough to exhaust the stack, files of many megabytes, bytes that are not UTF-8.
"""

from __future__ import annotations

import pathlib
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, SequenceNode

from armada_flyte.errors import InvalidConfig, shown

MAX_FILE_BYTES = 4 * 1024 * 1024
"""No configuration file is near this; a bigger one is a mistake (or an attack)."""
MAX_NODES = 100_000
"""Values in a document once its aliases are expanded."""
MAX_DEPTH = 64
"""Nesting of mappings and lists, aliases expanded."""
_MAX_PROBLEM = 400


class BoundedYamlError(yaml.YAMLError):
    """The document is bigger or deeper than any configuration file needs."""


class BoundedSafeLoader(yaml.SafeLoader):
    """PyYAML's safe loader, counting each node's size and depth with its aliases expanded.

    Nodes are composed children first, so each node's expanded size and depth are known from its
    children's (an alias reuses its anchor's), and a bomb is refused before it is constructed.
    """

    def __init__(self, stream: Any):
        super().__init__(stream)
        self._nesting = 0
        self._measure: dict[int, tuple[int, int]] = {}

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._nesting += 1
        if self._nesting > MAX_DEPTH:
            raise BoundedYamlError(f"it nests more than {MAX_DEPTH} levels deep")
        try:
            alias = self.check_event(AliasEvent)
            node = super().compose_node(parent, index)
        finally:
            self._nesting -= 1
        if alias:
            if id(node) not in self._measure:
                raise ComposerError(None, None, "an alias refers to the node that contains it", None)
            return node
        size, depth = self._measured(node)
        if size > MAX_NODES:
            raise BoundedYamlError(f"it expands to more than {MAX_NODES} values (are anchors and aliases nested?)")
        if depth > MAX_DEPTH:
            raise BoundedYamlError(f"it nests more than {MAX_DEPTH} levels deep once its aliases are expanded")
        self._measure[id(node)] = (size, depth)
        return node

    def _measured(self, node: Node) -> tuple[int, int]:
        if isinstance(node, SequenceNode):
            children = [self._measure[id(child)] for child in node.value]
        elif isinstance(node, MappingNode):
            children = [self._measure[id(part)] for pair in node.value for part in pair]
        else:
            return 1, 1
        return 1 + sum(size for size, _ in children), 1 + max((depth for _, depth in children), default=0)


def load_bounded(text: str, name: str = "<text>") -> Any:
    """`yaml.safe_load` within the bounds above; `yaml.YAMLError` or `ValueError` when refused."""
    loader = BoundedSafeLoader(text)
    loader.name = name  # where PyYAML's messages say the problem is
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def read_yaml(path: str | pathlib.Path, field: str, missing_fix: str) -> dict[str, Any]:
    """The file's mapping (empty for an empty file); `InvalidConfig` naming `field` when it is missing,
    unreadable, not YAML, not a mapping, or beyond the bounds above."""
    path = pathlib.Path(path)
    where = str(path)
    try:
        with path.open("rb") as stream:
            raw = stream.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise InvalidConfig(field, where, f"the file does not exist; {missing_fix}") from None
    except IsADirectoryError:
        raise InvalidConfig(field, where, f"this is a directory, not a file; {missing_fix}") from None
    except OSError as exc:
        raise InvalidConfig(field, where, f"the file could not be read ({exc.strerror or exc})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise InvalidConfig(
            field, where, f"the file is larger than {MAX_FILE_BYTES // 2**20} MiB; is it the right one?"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidConfig(field, where, f"the file is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    try:
        data = load_bounded(text, path.name)
    except BoundedYamlError as exc:
        raise InvalidConfig(field, where, f"the document is refused: {exc}") from None
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as exc:
        problem = str(exc) or type(exc).__name__
        if len(problem) > _MAX_PROBLEM:
            problem = problem[:_MAX_PROBLEM] + "..."
        raise InvalidConfig(field, where, f"not valid YAML: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InvalidConfig(
            field, where, f"the document is a {type(data).__name__}; write a mapping of `key: value` lines"
        )
    odd = [key for key in data if not isinstance(key, str)]
    if odd:  # `~: x` or `1: x`: a key YAML reads as null or a number names no setting
        raise InvalidConfig(
            field, where, f"the key {shown(odd[0])} is a {type(odd[0]).__name__}; every key is a name (text)"
        )
    return data
