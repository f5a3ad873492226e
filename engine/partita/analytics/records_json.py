"""Records as plain JSON, for tools that do not read Partita's Avro framing.

One JSON object per record: the record's metadata (`partition`, `position`, `key`, `timestamp`,
`recordType`, `valueType`, `intent`, `sourceRecordPosition`, and the rejection fields for a
rejection) and `value` with the field names of `docs/internals/records.md`. Variable documents
(the `variables` strings) become JSON objects and a VARIABLE's `value` its JSON value; bytes
become text when they are UTF-8 (a BPMN resource) and base64 otherwise, with checksums as hex.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from partita.protocol.codec import RecordCodec
from partita.protocol.enums import ValueType
from partita.protocol.records import Record

_JSON_TEXT_FIELDS = frozenset({"variables"})


def export_key(record: Record) -> bytes:
    """The process instance the record belongs to (its own key for records outside one), as
    decimal text: all records of an instance land on one partition of each export topic."""
    instance = getattr(record.value, "process_instance_key", -1)
    return str(instance if instance > 0 else record.key).encode()


def record_json(codec: RecordCodec, record: Record) -> dict[str, Any]:
    document: dict[str, Any] = {
        "partition": record.partition_id,
        "position": record.position,
        "key": record.key,
        "timestamp": record.timestamp,
        "recordType": record.record_type.name,
        "valueType": record.value_type.name,
        "intent": record.intent.name,
        "sourceRecordPosition": record.source_record_position,
    }
    if record.rejection_type is not None:
        document["rejectionType"] = record.rejection_type.name
        document["rejectionReason"] = record.rejection_reason
    value = _plain(codec.value_fields(record.value))
    if record.value_type is ValueType.VARIABLE and isinstance(value.get("value"), str):
        value["value"] = _parsed(value["value"])
    document["value"] = value
    return document


def _plain(fields: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, item in fields.items():
        if name in _JSON_TEXT_FIELDS and isinstance(item, str):
            out[name] = _parsed(item) if item else {}
        else:
            out[name] = _item(name, item)
    return out


def _item(name: str, item: Any) -> Any:
    if isinstance(item, bytes):
        if name == "checksum":
            return item.hex()
        try:
            return item.decode()
        except UnicodeDecodeError:
            return base64.b64encode(item).decode()
    if isinstance(item, dict):
        return _plain(item)
    if isinstance(item, list):
        return [_item(name, x) for x in item]
    return item


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text  # not JSON (a malformed command's document): kept as the text it was
