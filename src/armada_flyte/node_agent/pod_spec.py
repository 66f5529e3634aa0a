"""A pod's spec as the API server gives it (JSON) turned into the PodSpec message the pod runner takes.

The pod runner reads armada_client's Kubernetes protos (the shape Armada leases pods in). Their messages
follow the Go types, which differ from the JSON in three ways, each handled here by walking the message's
descriptor beside the JSON: a quantity (`"2Gi"`) is a message with a `string` field; an int-or-string
(`8080`, `"http"`) is a message with a type tag; and a struct the Go type embeds inline (a Volume's source, a
Probe's handler, a selector's `name`) is a field of its own in the proto. Fields newer than the protos are
dropped (a kubelet of an older version ignores them too). Pure.
"""

from __future__ import annotations

from typing import Any

from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor

_QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
_TIME = "k8s.io.apimachinery.pkg.apis.meta.v1.Time"


def pod_spec_message(spec: dict[str, Any]) -> core_v1.PodSpec:
    """The API server's `pod.spec` as armada_client's PodSpec."""
    return json_format.ParseDict(
        _shaped(spec, core_v1.PodSpec.DESCRIPTOR), core_v1.PodSpec(), ignore_unknown_fields=True
    )


def _shaped(value: dict[str, Any], descriptor: Descriptor) -> dict[str, Any]:
    """`value` (JSON of a Kubernetes struct) in the shape of the proto message `descriptor`."""
    fields = descriptor.fields_by_name
    shaped: dict[str, Any] = {}
    for key, item in value.items():
        field = fields.get(key)
        if field is None:
            inline = _inline_field(descriptor, key)
            if inline is not None:
                shaped.setdefault(inline.name, {})[key] = item
            continue
        shaped[key] = _field_value(field, item)
    for name, nested in list(shaped.items()):
        field = fields[name]
        if field.message_type is not None and _is_inline_holder(field, value):
            shaped[name] = _shaped(nested, field.message_type)
    return shaped


def _is_inline_holder(field: FieldDescriptor, original: dict[str, Any]) -> bool:
    """A field filled from the JSON's inline keys (not present under its own name in the JSON)."""
    return field.name not in original and not _is_map(field) and not _repeated(field)


def _inline_field(descriptor: Descriptor, key: str) -> FieldDescriptor | None:
    """The singular message field of `descriptor` whose message has a field `key` (Go's inline embedding)."""
    for field in descriptor.fields:
        if (
            field.message_type is not None
            and not _repeated(field)
            and field.message_type.full_name not in (_QUANTITY, _INT_OR_STRING, _TIME)
            and (key in field.message_type.fields_by_name or _inline_field(field.message_type, key) is not None)
        ):
            return field
    return None


def _repeated(field: FieldDescriptor) -> bool:
    """Whether the field is a list (protobuf 6 names it `is_repeated`; older ones compare the label)."""
    repeated = getattr(field, "is_repeated", None)
    return bool(repeated) if repeated is not None else field.label == FieldDescriptor.LABEL_REPEATED


def _is_map(field: FieldDescriptor) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _field_value(field: FieldDescriptor, item: Any) -> Any:
    if field.message_type is None or item is None:
        return item
    if _is_map(field):
        value_field = field.message_type.fields_by_name["value"]
        return {k: _field_value(value_field, v) for k, v in item.items()}
    if _repeated(field):
        return [_single(field.message_type, v) for v in item]
    return _single(field.message_type, item)


def _single(message: Descriptor, item: Any) -> Any:
    if message.full_name == _QUANTITY:
        return {"string": str(item)}
    if message.full_name == _INT_OR_STRING:
        return {"type": 0, "intVal": item} if isinstance(item, int) else {"type": 1, "strVal": str(item)}
    if message.full_name == _TIME:
        return None
    if isinstance(item, dict):
        return _shaped(item, message)
    return item
