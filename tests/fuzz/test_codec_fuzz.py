"""Fuzzing the Avro record codec: every valid record round-trips, and no bytes at all make
`decode` raise anything but a typed DecodeError or RecordTooLargeError.

Run longer with `HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest tests/fuzz/test_codec_fuzz.py`.
"""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st
from msgspec.structs import replace

from partita.protocol.codec import MAGIC, RecordCodec
from partita.protocol.enums import ValueType
from partita.protocol.errors import DecodeError, ProtocolError, RecordTooLargeError
from partita.protocol.records import Record
from partita.protocol.schemas import known_schemas
from tests.support.codec import CODEC
from tests.support.fuzz_profiles import fuzz_settings
from tests.support.record_strategies import SAMPLES, damaged, records


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
        [b"", b"\x00" * 12, MAGIC + b"\x01" * 8, SAMPLES[0][:-1], SAMPLES[0] + b"\x00"]
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
