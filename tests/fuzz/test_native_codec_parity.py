"""The compiled codec (`partita_native`) against the pure-Python one: for every valid record,
and for damaged and random bytes, both decoders give the same fields or both refuse; both
encoders write the same bytes, and both refuse a field of the wrong type.

Both decoders are built here side by side, whatever PARTITA_NATIVE says, so the pass of the
suite that runs pure Python still checks them against each other. Without the compiled
module these tests skip, unless PARTITA_NATIVE=on (as the suite's main pass sets), where they
fail: CI never skips them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from msgspec.structs import fields, replace

from partita.protocol.codec import HEADER_SIZE, MAGIC, RecordCodec
from partita.protocol.decoder import compile_decoder
from partita.protocol.enums import ValueType
from partita.protocol.errors import EncodeError
from partita.protocol.intents import JobIntent, MessageIntent
from partita.protocol.native import native_all_encoder
from partita.protocol.records import Record
from partita.protocol.schemas import current_schema
from partita.protocol.values import JobValue
from tests.support.codec import CODEC
from tests.support.fuzz_profiles import fuzz_settings
from tests.support.native_codec import compiled_decoder
from tests.support.record_strategies import damaged, records
from tests.support.sample_records import sample_record

PURE = compile_decoder(current_schema().raw)


def _outcome(decode: Callable[[bytes, int], Any], data: bytes) -> tuple[str, Any]:
    try:
        return "decoded", decode(data, HEADER_SIZE)
    except Exception as exc:  # the codec turns any exception into MalformedBodyError
        return "refused", type(exc).__name__


def _same(data: bytes) -> None:
    compiled = _outcome(compiled_decoder(), data)
    pure = _outcome(PURE, data)
    if pure[0] == "refused":
        assert compiled[0] == "refused", (data.hex(), compiled)
        assert compiled[1] == "ValueError", compiled  # one exception type, with a message
    else:
        assert compiled == pure, data.hex()


@fuzz_settings()
@given(record=records())
def test_both_decoders_read_every_valid_record_the_same(record: Record) -> None:
    data = CODEC.encode(record)
    outcome = _outcome(compiled_decoder(), data)
    assert outcome == ("decoded", PURE(data, HEADER_SIZE))
    assert outcome[1][1] == len(data)


@fuzz_settings()
@given(data=damaged())
def test_both_decoders_agree_on_damaged_records(data: bytes) -> None:
    _same(data)


@fuzz_settings()
@given(body=st.binary(max_size=300))
@example(body=b"\x02" + b"\xff" * 9 + b"\x01")  # an 11-byte varint
@example(body=b"\x02" + b"\xff" * 9 + b"\x02")  # a 10-byte varint over 64 bits
@example(body=b"\x02" + b"\xfe" * 9 + b"\x01")  # the longest 64-bit varint
@example(body=b"\x00" * 3 + b"\x7f")  # an enum index out of range
def test_both_decoders_agree_on_any_body(body: bytes) -> None:
    _same(MAGIC + CODEC.fingerprint + body)


def test_a_decode_error_of_the_compiled_decoder_says_what_and_where() -> None:
    data = MAGIC + CODEC.fingerprint + b"\x02\x04\x06"  # the record ends inside its fields
    with pytest.raises(ValueError, match=r"record ends at byte 13 inside a value"):
        compiled_decoder()(data, HEADER_SIZE)


def test_the_compiled_decoder_refuses_nesting_deeper_than_its_limit() -> None:
    """A recursive schema cannot let hostile bytes exhaust the native stack."""
    import partita_native  # lazy: the compiled module, present when compiled_decoder() did not skip

    compiled_decoder()
    nested = partita_native.Decoder([(None, (("nullable", ("record", 0)),))])
    assert nested.decode(b"\x02" * 10 + b"\x00", 0)[1] == 11
    with pytest.raises(ValueError, match="nested deeper than 64"):
        nested.decode(b"\x02" * 100_000 + b"\x00", 0)


def test_the_compiled_decoder_refuses_a_program_naming_a_record_it_lacks() -> None:
    import partita_native  # lazy: the compiled module, present when compiled_decoder() did not skip

    compiled_decoder()
    with pytest.raises(ValueError, match="names a record it does not define"):
        partita_native.Decoder([(None, (("record", 3),))])


# -- whole records: the compiled decoder builds the Record itself -----------------------------


def _codec_outcome(codec: RecordCodec, data: bytes, offset: int | None) -> tuple[str, Any]:
    try:
        return "decoded", codec.decode(data, topic="log", partition=0, offset=offset)
    except Exception as exc:  # the words may differ: each codec's decoder names the failure
        return "refused", type(exc).__name__


@fuzz_settings()
@given(record=records(), offset=st.none() | st.integers(0, 2**40))
def test_both_codecs_decode_every_valid_record_to_the_same_record(
    record: Record, offset: int | None
) -> None:
    data = CODEC.encode(record)
    compiled = _compiled_codec().decode(data, offset=offset)
    assert compiled == PURE_CODEC.decode(data, offset=offset)
    assert compiled.position == (-1 if offset is None else offset)


@fuzz_settings()
@given(data=damaged(), offset=st.none() | st.integers(0, 2**40))
def test_both_codecs_decode_or_refuse_damaged_records_alike(
    data: bytes, offset: int | None
) -> None:
    """Same record, or the same typed error (the compiled path gives up on anything
    irregular, and the checked path names it)."""
    assert _codec_outcome(_compiled_codec(), data, offset) == _codec_outcome(
        PURE_CODEC, data, offset
    )


def test_strings_repeated_across_records_are_one_object() -> None:
    """The compiled decoder shares the strings it met lately (process ids, element ids,
    tenants), so dict lookups on them reuse one cached hash."""
    data = CODEC.encode(sample_record(ValueType.PROCESS_INSTANCE))
    codec = _compiled_codec()
    first, second = codec.decode(data), codec.decode(data)
    assert first.value.bpmn_process_id == second.value.bpmn_process_id
    assert first.value.bpmn_process_id is second.value.bpmn_process_id


# -- the encoder ------------------------------------------------------------------------------

PURE_CODEC = RecordCodec(native=False)


def _compiled_codec() -> RecordCodec:
    compiled_decoder()  # skips (or fails under PARTITA_NATIVE=on) without the compiled module
    return RecordCodec(native=True)


@fuzz_settings()
@given(record=records())
def test_both_encoders_write_every_valid_record_the_same(record: Record) -> None:
    assert _compiled_codec().encode(record) == PURE_CODEC.encode(record)


_WRONG = st.sampled_from([None, 1.5, "text", b"raw", 2**70, -(2**64), (), {}, object()])


@fuzz_settings()
@given(record=records(), data=st.data())
def test_the_compiled_encoder_is_never_laxer_than_the_pure_one(
    record: Record, data: st.DataObject
) -> None:
    """Any one field of the value replaced by a value of another type: what the pure-Python
    encoder refuses, the compiled one refuses too, with an EncodeError. What the pure one
    writes out of leniency (`bytes(())` for a bytes field, a falsy value for an empty array)
    the compiled one writes the same, or refuses as not of its type."""
    names = [f.name for f in fields(record.value)]
    name = data.draw(st.sampled_from(names))
    wrong = replace(record, value=replace(record.value, **{name: data.draw(_WRONG)}))
    try:
        expected = PURE_CODEC.encode(wrong)
    except EncodeError:
        with pytest.raises(EncodeError):
            _compiled_codec().encode(wrong)
        return
    try:
        assert _compiled_codec().encode(wrong) == expected
    except EncodeError as refused:
        assert "is not an instance of" in str(refused), refused


def test_an_int_field_beyond_32_bits_is_refused_by_the_compiled_encoder() -> None:
    record = sample_record(ValueType.JOB)
    too_big = replace(record, value=replace(record.value, retries=2**31))
    with pytest.raises(EncodeError, match=r"does not fit an Avro int \(32-bit\)"):
        _compiled_codec().encode(too_big)


# -- the encoder's slots: instances of exactly the program's class are read from their slots --


class _Slotted:
    __slots__ = ("count", "name")

    def __init__(self, count: int | None = None, name: str | None = None) -> None:
        if count is not None:
            self.count = count
        if name is not None:
            self.name = name


class _Derived(_Slotted):
    __slots__ = ()


class _Computed:
    """`count` is a property, not a slot: the encoder reads it through getattr."""

    name = "fixed"

    @property
    def count(self) -> int:
        return 21


_PROGRAM_OPS = (("long",), ("string",))


class _Watched:
    """Slots, and a `__getattribute__` that counts the reads that go through it."""

    __slots__ = ("count", "name")
    reads = 0

    def __init__(self, count: int, name: str) -> None:
        self.count = count
        self.name = name

    def __getattribute__(self, attribute: str) -> Any:
        type(self).reads += 1
        return object.__getattribute__(self, attribute)


def _slot_encoder(cls: type | None) -> Any:
    import partita_native  # lazy: the compiled module, present when compiled_decoder() did not skip

    compiled_decoder()
    return partita_native.Encoder([(("count", "name"), _PROGRAM_OPS, cls)], b"P")


def test_slots_subclasses_and_computed_attributes_encode_the_same() -> None:
    expected = b"P" + bytes([42, 10]) + b"fixed"  # zigzag 21, then a string of 5
    assert _slot_encoder(_Slotted).encode(_Slotted(21, "fixed")) == expected
    # a subclass shares the slots, yet is read through getattr: the same bytes
    assert _slot_encoder(_Slotted).encode(_Derived(21, "fixed")) == expected
    # a class whose attributes are not all slots is read through getattr throughout
    assert _slot_encoder(_Computed).encode(_Computed()) == expected
    # any object at all, when the program names no class
    assert _slot_encoder(None).encode(_Computed()) == expected


def test_an_instance_of_exactly_the_class_is_read_from_its_slots_without_getattr() -> None:
    watched = _Watched(21, "fixed")
    _Watched.reads = 0
    assert _slot_encoder(_Watched).encode(watched) == b"P" + bytes([42, 10]) + b"fixed"
    assert _Watched.reads == 0
    assert _slot_encoder(None).encode(watched) == b"P" + bytes([42, 10]) + b"fixed"
    assert _Watched.reads == 2  # without the class: through getattr, one read per field


def test_an_unset_slot_is_the_attribute_error_that_names_it() -> None:
    with pytest.raises(AttributeError, match="name"):
        _slot_encoder(_Slotted).encode(_Slotted(21))


def test_a_record_subclass_encodes_as_the_record_it_extends() -> None:
    class Subclassed(Record):
        pass

    record = sample_record(ValueType.JOB)
    subclassed = Subclassed(**{f.name: getattr(record, f.name) for f in fields(record)})
    codec = _compiled_codec()
    assert codec._encode(subclassed) == codec.encode(record) == PURE_CODEC.encode(record)


def test_the_compiled_encode_all_checks_each_record_before_it_writes_it() -> None:
    """Without its own checks the compiled batch encoder would write a record whose intent
    names another value type: it refuses it, naming the record, and the codec's per-record
    path then says why."""
    compiled_decoder()
    kinds = {JobIntent.COMPLETE: (ValueType.JOB, JobValue)}
    encoder = native_all_encoder(
        current_schema().raw,
        Record,
        CODEC.encode(sample_record(ValueType.JOB))[:10],
        kinds,
        200,
        want=True,  # whatever PARTITA_NATIVE says, as compiled_decoder()
    )
    assert encoder is not None
    encode_all = encoder.encode_all
    good = sample_record(ValueType.JOB)
    good = replace(good, intent=JobIntent.COMPLETE, value=JobValue())
    assert encode_all([good, good]) == [CODEC.encode(good)] * 2
    foreign = replace(good, intent=MessageIntent.PUBLISH)
    with pytest.raises(ValueError, match="record 1: its value type, intent and value do not"):
        encode_all([good, foreign])
    with pytest.raises(ValueError, match="record 0: its value type"):
        encode_all([replace(good, value_type=ValueType.MESSAGE)])
    big = replace(good, value=JobValue(variables='{"x": "' + "y" * 300 + '"}'))
    with pytest.raises(ValueError, match=r"record 0 is \d+ bytes, over the limit of 200"):
        encode_all([big])
