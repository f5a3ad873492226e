"""Records with every field set to a non-default value, for round trips and interop."""

from __future__ import annotations

import json
import typing
from collections.abc import Mapping
from enum import Enum
from typing import Any

from msgspec import Struct
from msgspec.structs import fields

from partita.protocol import enums, values
from partita.protocol.convert import snake_case
from partita.protocol.enums import RecordType, ValueType
from partita.protocol.intents import INTENTS_BY_VALUE_TYPE
from partita.protocol.records import Record
from partita.protocol.schemas import current_schema, named_types
from partita.protocol.values import VALUE_CLASSES


def _avro_int_fields() -> set[tuple[str, str]]:
    """(record name, attribute) of every 32-bit Avro `int` field: samples and the
    hypothesis strategies (tests/support/record_strategies.py) keep them within 32 bits."""
    raw = json.loads(current_schema().path.read_text())
    return {
        (name, snake_case(field["name"]))
        for name, record in named_types(raw, "record").items()
        for field in record["fields"]
        if field["type"] == "int"
    }


INT_FIELDS = _avro_int_fields()


def sample_value(cls: type[Any]) -> Any:
    hints = typing.get_type_hints(cls, vars(values) | vars(enums))
    kwargs: dict[str, Any] = {}
    for i, field in enumerate(fields(cls)):
        hint = hints[field.name]
        if (cls.__name__, field.name) in INT_FIELDS:
            kwargs[field.name] = 1_000_000 + i
        else:
            kwargs[field.name] = _sample(hint, i)
    return cls(**kwargs)


def _sample(hint: Any, i: int) -> Any:
    origin = typing.get_origin(hint)
    if hint is int:
        return 2251799813685248 + i * 7919
    if hint is str:
        return f"text-{i}-é✓"
    if hint is bool:
        return True
    if hint is bytes:
        return bytes([0, 255, i])
    if isinstance(hint, type) and issubclass(hint, Enum):
        return list(hint)[-1]
    if origin is tuple:
        item = typing.get_args(hint)[0]
        if isinstance(item, type) and issubclass(item, Struct):
            return (sample_value(item),)
        return (_sample(item, i), _sample(item, i + 1))
    if origin is Mapping:
        return {"region": "eu", "tier": f"gold-{i}"}
    raise TypeError(f"no sample for {hint!r}")


def sample_record(value_type: ValueType) -> Record:
    """An EVENT (or COMMAND when the value type has no events) with everything set."""
    intents = list(INTENTS_BY_VALUE_TYPE[value_type])
    intent = intents[-1]
    return Record(
        record_type=RecordType.EVENT if intent.is_event else RecordType.COMMAND,
        value_type=value_type,
        intent=intent,
        value=sample_value(VALUE_CLASSES[value_type]),
        key=2251799813685249,
        partition_id=1,
        source_record_position=41,
        timestamp=1_764_000_000_000,
        engine_version="0.1.0",
    )
