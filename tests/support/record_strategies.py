"""Hypothesis strategies for records: valid records of any value type, values of any record
value class, and damaged encodings."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from enum import Enum
from typing import Any

from hypothesis import strategies as st
from msgspec import Struct
from msgspec.structs import fields

from partita.protocol import enums, values
from partita.protocol.codec import HEADER_SIZE
from partita.protocol.enums import RecordType, RejectionType, ValueType
from partita.protocol.intents import INTENTS_BY_VALUE_TYPE
from partita.protocol.records import Record
from partita.protocol.values import VALUE_CLASSES
from tests.support.codec import CODEC
from tests.support.sample_records import INT_FIELDS, sample_record

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
"""Avro strings are UTF-8: lone surrogates cannot be encoded, so no valid record holds one."""

_HINTS = vars(values) | vars(enums)


def _strategy(hint: Any, int32: bool) -> st.SearchStrategy[Any]:
    origin = typing.get_origin(hint)
    if hint is int:
        return INT32 if int32 else INT64
    if hint is str:
        return TEXT
    if hint is bool:
        return st.booleans()
    if hint is bytes:
        return st.binary(max_size=20)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return st.sampled_from(list(hint))
    if isinstance(hint, type) and issubclass(hint, Struct):
        return value_of(hint)
    if origin is tuple:
        return st.lists(_strategy(typing.get_args(hint)[0], False), max_size=3).map(tuple)
    if origin is Mapping:
        return st.dictionaries(TEXT, TEXT, max_size=3)
    raise TypeError(f"no strategy for {hint!r}")


def value_of(cls: type[Any]) -> st.SearchStrategy[Any]:
    """Values of a record value class with every field drawn from its type (Avro `int` fields
    within 32 bits, `long` fields within 64)."""
    hints = typing.get_type_hints(cls, _HINTS)
    return st.builds(
        cls,
        **{
            f.name: _strategy(hints[f.name], (cls.__name__, f.name) in INT_FIELDS)
            for f in fields(cls)
        },
    )


@st.composite
def records(draw: st.DrawFn, value_type: ValueType | None = None) -> Record:
    """A valid record of any value type, any of its intents and any record type."""
    value_type = value_type or draw(st.sampled_from(list(ValueType)))
    record_type = draw(st.sampled_from(list(RecordType)))
    rejected = record_type is RecordType.COMMAND_REJECTION
    return Record(
        record_type=record_type,
        value_type=value_type,
        intent=draw(st.sampled_from(list(INTENTS_BY_VALUE_TYPE[value_type]))),
        value=draw(value_of(VALUE_CLASSES[value_type])),
        key=draw(INT64),
        partition_id=draw(INT32),
        source_record_position=draw(INT64),
        timestamp=draw(INT64),
        rejection_type=draw(st.sampled_from(list(RejectionType))) if rejected else None,
        rejection_reason=draw(TEXT) if rejected else "",
        engine_version=draw(TEXT),
        record_version=draw(INT32),
    )


SAMPLES = [CODEC.encode(sample_record(value_type)) for value_type in ValueType]
"""The encoding of the sample record of every value type."""


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    """A valid encoding with random byte flips, then maybe truncated or extended."""
    raw = bytearray(draw(st.sampled_from(SAMPLES) | records().map(CODEC.encode)))
    for _ in range(draw(st.integers(0, 4))):
        index = draw(st.integers(HEADER_SIZE if draw(st.booleans()) else 0, len(raw) - 1))
        raw[index] = draw(st.integers(0, 255))
    cut = draw(st.none() | st.integers(0, len(raw)))
    if cut is not None:
        del raw[cut:]
    return bytes(raw) + draw(st.binary(max_size=8))
