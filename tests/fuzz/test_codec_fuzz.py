"""Fuzzing the Avro record codec: every valid record round-trips, and no bytes at all make
`decode` raise anything but a typed DecodeError or RecordTooLargeError.

Run longer with `HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest tests/fuzz/test_codec_fuzz.py`.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Mapping
from enum import Enum
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st
from msgspec import Struct
from msgspec.structs import fields, replace

from partita.protocol import enums, values
from partita.protocol.codec import HEADER_SIZE, MAGIC, RecordCodec
from partita.protocol.convert import snake_case
from partita.protocol.enums import RecordType, RejectionType, ValueType
from partita.protocol.errors import DecodeError, ProtocolError, RecordTooLargeError
from partita.protocol.intents import INTENTS_BY_VALUE_TYPE
from partita.protocol.records import Record
from partita.protocol.schemas import current_schema, known_schemas, named_types
from partita.protocol.values import VALUE_CLASSES
from tests.support.fuzz_profiles import fuzz_settings
from tests.support.sample_records import sample_record

CODEC = RecordCodec()
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
"""Avro strings are UTF-8: lone surrogates cannot be encoded, so no valid record holds one."""


def _avro_int_fields() -> set[tuple[str, str]]:
    """(record name, attribute) of every 32-bit Avro `int` field."""
    raw = json.loads(current_schema().path.read_text())
    return {
        (name, snake_case(field["name"]))
        for name, record in named_types(raw, "record").items()
        for field in record["fields"]
        if field["type"] == "int"
    }


_INT_FIELDS = _avro_int_fields()
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
            f.name: _strategy(hints[f.name], (cls.__name__, f.name) in _INT_FIELDS)
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


def assert_decodes_or_refuses(data: bytes, offset: int | None = None) -> Record | None:
    """The decoding property: a Record, or a typed error that says what and where."""
    try:
        return CODEC.decode(data, topic="fuzz.log", partition=2, offset=offset)
    except (DecodeError, RecordTooLargeError) as error:
        assert error.reason, "a decode error must say what is wrong"
        if offset is not None:
            assert f"fuzz.log/2@{offset}" in str(error), str(error)
        return None


# -- (a) round trips ------------------------------------------------------------------------


@fuzz_settings()
@given(record=records(), offset=st.integers(0, 2**62))
def test_every_valid_record_round_trips(record: Record, offset: int) -> None:
    assert CODEC.decode(CODEC.encode(record), offset=offset) == replace(record, position=offset)


@fuzz_settings(max_examples=20)
@given(data=st.data())
def test_every_value_type_round_trips_with_random_fields(data: st.DataObject) -> None:
    for value_type in ValueType:  # each value type on every example, not left to chance
        record = data.draw(records(value_type))
        assert CODEC.decode(CODEC.encode(record)) == record


# -- (b) any bytes --------------------------------------------------------------------------

_HEADERS = [MAGIC + schema.fingerprint_bytes for schema in known_schemas()]
_SAMPLES = [CODEC.encode(sample_record(value_type)) for value_type in ValueType]


@fuzz_settings()
@given(data=st.binary(max_size=200))
@example(data=b"")
@example(data=MAGIC)
@example(data=MAGIC + b"\x00" * 8)
def test_any_bytes_decode_or_raise_a_decode_error(data: bytes) -> None:
    assert_decodes_or_refuses(data)


@fuzz_settings()
@given(header=st.sampled_from(_HEADERS), body=st.binary(max_size=300))
@example(header=_HEADERS[0], body=b"\x02" + b"\xff" * 9 + b"\x01")  # an 11-byte varint
@example(header=_HEADERS[0], body=b"\x00" * 3 + b"\x7f")  # an enum index out of range
def test_any_body_under_a_known_schema_decodes_or_raises_a_decode_error(
    header: bytes, body: bytes
) -> None:
    """Random Avro bodies behind every known fingerprint: the generated decoder (current
    schema) and fastavro's resolution (older schemas) both stay typed."""
    assert_decodes_or_refuses(header + body)


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    """A valid encoding with random byte flips, then maybe truncated or extended."""
    raw = bytearray(draw(st.sampled_from(_SAMPLES) | records().map(CODEC.encode)))
    for _ in range(draw(st.integers(0, 4))):
        index = draw(st.integers(HEADER_SIZE if draw(st.booleans()) else 0, len(raw) - 1))
        raw[index] = draw(st.integers(0, 255))
    cut = draw(st.none() | st.integers(0, len(raw)))
    if cut is not None:
        del raw[cut:]
    return bytes(raw) + draw(st.binary(max_size=8))


@fuzz_settings()
@given(data=damaged(), offset=st.none() | st.integers(0, 2**40))
def test_damaged_records_decode_or_raise_a_decode_error(data: bytes, offset: int | None) -> None:
    assert_decodes_or_refuses(data, offset)


def _outcome(decode: Any, data: bytes) -> Record | str:
    try:
        record: Record = decode(data)
    except (DecodeError, RecordTooLargeError) as error:
        return f"{type(error).__name__}: {error}"
    return record


@fuzz_settings()
@given(data=damaged() | st.sampled_from(_HEADERS).map(lambda h: h + b"\x00" * 12))
def test_the_fast_path_decodes_exactly_what_the_checked_path_does(data: bytes) -> None:
    """`decode` tries a short path first (current schema, within the limit, well formed, a
    valid value type and intent); whatever it returns, or refuses, the checked path returns
    or refuses the same way, with the same error."""
    checked = _outcome(lambda raw: CODEC._decode_checked(raw, "fuzz.log", 2, 7), data)
    fast = _outcome(lambda raw: CODEC.decode(raw, topic="fuzz.log", partition=2, offset=7), data)
    assert fast == checked


# -- (c) where ------------------------------------------------------------------------------


@fuzz_settings(max_examples=50)
@given(
    data=st.sampled_from(
        [b"", b"\x00" * 12, MAGIC + b"\x01" * 8, _SAMPLES[0][:-1], _SAMPLES[0] + b"\x00"]
    ),
    offset=st.integers(0, 2**62),
)
def test_a_decode_error_names_the_offset(data: bytes, offset: int) -> None:
    try:
        CODEC.decode(data, topic="partita.log", partition=0, offset=offset)
    except ProtocolError as error:
        assert error.where == f"partita.log/0@{offset}"
        assert str(error).endswith(f"(at partita.log/0@{offset})")
    else:
        raise AssertionError("invalid bytes decoded")


@fuzz_settings(max_examples=20)
@given(record=records(), offset=st.integers(0, 2**40))
def test_a_record_over_the_limit_is_refused_naming_the_limit_and_offset(
    record: Record, offset: int
) -> None:
    data = CODEC.encode(record)
    small = RecordCodec(max_record_bytes=len(data) - 1)
    try:
        small.decode(data, topic="partita.log", partition=1, offset=offset)
    except RecordTooLargeError as error:
        assert f"over the limit of {len(data) - 1}" in str(error)
        assert error.where == f"partita.log/1@{offset}"
    else:
        raise AssertionError("an oversized record decoded")
