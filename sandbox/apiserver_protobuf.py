"""Decoding the Kubernetes protobuf encoding for the few kinds kubectl's generators send that way.

`kubectl create configmap|secret|namespace` post protobuf bodies (typed client-go clients), while `kubectl
apply/create -f` use JSON. The sandbox decodes the envelope (magic `k8s\\0` + runtime.Unknown) and the
fields of those kinds into their JSON form; any other kind is answered 415 by the caller.
"""

from __future__ import annotations

import base64
from typing import Any

MAGIC = b"k8s\x00"

# Field number -> (JSON name, how to decode). Numbers are those of k8s.io/api generated.proto.
_Schema = dict[int, tuple[str, Any]]
_OBJECT_META: _Schema = {
    1: ("name", "string"),
    2: ("generateName", "string"),
    3: ("namespace", "string"),
    11: ("labels", "map_string"),
    12: ("annotations", "map_string"),
    14: ("finalizers", "repeated_string"),
}
_SCHEMAS: dict[tuple[str, str], _Schema] = {
    ("v1", "ConfigMap"): {
        1: ("metadata", _OBJECT_META),
        2: ("data", "map_string"),
        3: ("binaryData", "map_bytes"),
        4: ("immutable", "bool"),
    },
    ("v1", "Secret"): {
        1: ("metadata", _OBJECT_META),
        2: ("data", "map_bytes"),
        3: ("type", "string"),
        4: ("stringData", "map_string"),
        5: ("immutable", "bool"),
    },
    ("v1", "Namespace"): {
        1: ("metadata", _OBJECT_META),
        2: ("spec", {1: ("finalizers", "repeated_string")}),
    },
}


class ProtobufUnsupported(ValueError):
    """Not a protobuf body the sandbox can decode."""


def _varint(data: bytes, index: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if index >= len(data):
            raise ProtobufUnsupported("truncated varint")
        byte = data[index]
        index += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result, index


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs: ints for varints, bytes for length-delimited values."""
    fields: list[tuple[int, int | bytes]] = []
    index = 0
    while index < len(data):
        key, index = _varint(data, index)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, index = _varint(data, index)
            fields.append((number, value))
        elif wire_type == 2:
            length, index = _varint(data, index)
            fields.append((number, data[index : index + length]))
            index += length
        elif wire_type in (1, 5):
            index += 8 if wire_type == 1 else 4  # fixed-width numbers: none in the decoded kinds
        else:
            raise ProtobufUnsupported(f"unsupported wire type {wire_type}")
    return fields


def _map_entry(raw: bytes) -> tuple[str, bytes]:
    entry = dict(_fields(raw))
    key, value = entry.get(1, b""), entry.get(2, b"")
    if not isinstance(key, bytes) or not isinstance(value, bytes):
        raise ProtobufUnsupported("malformed map entry")
    return key.decode(), value


def _decode(data: bytes, schema: _Schema) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for number, value in _fields(data):
        if number not in schema:
            continue
        name, kind = schema[number]
        if isinstance(kind, dict):
            if not isinstance(value, bytes):
                raise ProtobufUnsupported(f"{name}: expected a message")
            obj[name] = _decode(value, kind)
        elif kind == "bool":
            obj[name] = bool(value)
        elif not isinstance(value, bytes):
            raise ProtobufUnsupported(f"{name}: expected bytes")
        elif kind == "string":
            if value:
                obj[name] = value.decode()
        elif kind == "repeated_string":
            obj.setdefault(name, []).append(value.decode())
        elif kind in ("map_string", "map_bytes"):
            key, raw = _map_entry(value)
            text = raw.decode() if kind == "map_string" else base64.b64encode(raw).decode()
            obj.setdefault(name, {})[key] = text
    return obj


def decode_protobuf_object(body: bytes) -> dict[str, Any]:
    if not body.startswith(MAGIC):
        raise ProtobufUnsupported("missing the k8s protobuf envelope")
    envelope = dict(_fields(body[len(MAGIC) :]))
    type_meta, raw = envelope.get(1, b""), envelope.get(2, b"")
    if not isinstance(type_meta, bytes) or not isinstance(raw, bytes):
        raise ProtobufUnsupported("malformed envelope")
    meta = dict(_fields(type_meta))
    api_version = meta.get(1, b"")
    kind = meta.get(2, b"")
    if not isinstance(api_version, bytes) or not isinstance(kind, bytes):
        raise ProtobufUnsupported("malformed type meta")
    key = (api_version.decode(), kind.decode())
    schema = _SCHEMAS.get(key)
    if schema is None:
        raise ProtobufUnsupported(f"protobuf bodies of {key[1]} ({key[0]}) are not served by the sandbox")
    return {"apiVersion": key[0], "kind": key[1], **_decode(raw, schema)}
