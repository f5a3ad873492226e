"""The Avro single-object codec: round trips, the wire header, schema evolution, bad input."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest
from msgspec.structs import replace

from partita.protocol import errors
from partita.protocol.codec import MAGIC, RecordCodec
from partita.protocol.enums import RecordType, RejectionType, ValueType
from partita.protocol.intents import (
    JobIntent,
    MessageIntent,
    ProcessInstanceCreationIntent,
    UserTaskIntent,
)
from partita.protocol.records import Record, command
from partita.protocol.schemas import (
    crc64_avro,
    current_schema,
    known_schemas,
    load_schema,
    named_types,
)
from partita.protocol.values import (
    JobValue,
    MessageValue,
    ProcessInstanceCreationValue,
    UserTaskValue,
)
from partita.resources import contract_dir
from tests.support.codec import CODEC, valid_encoding
from tests.support.sample_records import sample_record


@pytest.mark.parametrize("value_type", list(ValueType), ids=lambda v: v.name)
def test_every_value_type_round_trips_with_every_field_set(value_type: ValueType) -> None:
    record = sample_record(value_type)
    assert CODEC.decode(CODEC.encode(record), offset=17) == replace(record, position=17)


@pytest.mark.parametrize("value_type", list(ValueType), ids=lambda v: v.name)
def test_the_generated_encoder_writes_exactly_what_fastavro_writes(value_type: ValueType) -> None:
    record = sample_record(value_type)
    converter = CODEC._by_class[type(record.value)]
    datum = {
        "partitionId": record.partition_id,
        "key": record.key,
        "sourceRecordPosition": record.source_record_position,
        "recordType": record.record_type.name,
        "valueType": record.value_type.name,
        "intent": record.intent.name,
        "recordVersion": record.record_version,
        "timestamp": record.timestamp,
        "rejectionType": None,
        "rejectionReason": record.rejection_reason,
        "engineVersion": record.engine_version,
        "value": (converter.fullname, converter.to_avro(record.value)),
    }
    out = io.BytesIO()
    fastavro.schemaless_writer(out, current_schema().schema, datum)
    assert CODEC.encode(record)[10:] == out.getvalue()


def test_a_rejection_round_trips_with_type_and_reason() -> None:
    rejected = Record(
        RecordType.COMMAND_REJECTION,
        ValueType.MESSAGE,
        MessageIntent.PUBLISH,
        MessageValue(name="paid", correlation_key="order-1", message_id="m1"),
        rejection_type=RejectionType.ALREADY_EXISTS,
        rejection_reason="message m1 already published",
    )
    assert CODEC.decode(CODEC.encode(rejected)) == rejected


def test_wire_format_is_single_object_encoding_of_the_current_schema() -> None:
    data = CODEC.encode(command(JobIntent.COMPLETE, JobValue(variables='{"ok": true}'), key=5))
    schema = current_schema()
    assert data[:2] == MAGIC == b"\xc3\x01"
    assert data[2:10] == crc64_avro(schema.canonical.encode()).to_bytes(8, "little")
    body = fastavro.schemaless_reader(io.BytesIO(data[10:]), schema.schema)
    assert body["intent"] == "COMPLETE"
    assert body["value"]["variables"] == '{"ok": true}'


def test_crc64_avro_matches_the_avro_specification_vectors() -> None:
    # Avro's share/test/data/schema-tests.txt: fingerprints of primitive canonical forms.
    assert crc64_avro(b'"int"') == 0x7275D51A3F395C8F
    assert crc64_avro(b'"null"') == 0x63DD24E7CC258F8A


# -- schema evolution -------------------------------------------------------------------------


def _v1() -> Any:
    return load_schema(contract_dir("avro") / "history" / "record.v1.avsc")


def test_a_record_written_with_the_first_schema_version_still_decodes() -> None:
    v1 = _v1()
    assert "tenantId" not in v1.canonical  # the real change: v2 added tenantId everywhere
    old_writer = RecordCodec(schemas=(v1,))
    job = JobValue(type="payment", retries=2, variables='{"a": 1}', element_id="charge")
    old_bytes = old_writer.encode(command(JobIntent.COMPLETE, job, key=7))
    assert old_bytes[2:10] == v1.fingerprint_bytes != CODEC.fingerprint

    decoded = CODEC.decode(old_bytes)

    assert decoded.value == replace(job, tenant_id="<default>")
    assert decoded.intent is JobIntent.COMPLETE and decoded.key == 7


def test_a_record_written_before_record_version_existed_decodes_as_version_1() -> None:
    v2 = load_schema(contract_dir("avro") / "history" / "record.v2.avsc")
    assert "recordVersion" not in v2.canonical  # v3 added the envelope's recordVersion
    old_bytes = RecordCodec(schemas=(v2,)).encode(command(JobIntent.COMPLETE, JobValue(), key=9))
    decoded = CODEC.decode(old_bytes)
    assert decoded.record_version == 1 and decoded.key == 9


def test_without_the_old_version_in_history_its_records_are_an_unknown_schema() -> None:
    only_current = RecordCodec(schemas=(current_schema(),))
    old_bytes = RecordCodec(schemas=(_v1(),)).encode(command(JobIntent.COMPLETE, JobValue()))
    with pytest.raises(errors.UnknownSchemaError, match=_v1().fingerprint_bytes.hex()):
        only_current.decode(old_bytes, topic="p.log", partition=2, offset=99)


def test_known_schemas_are_the_current_one_then_history() -> None:
    assert known_schemas()[0] == current_schema()
    assert {s.path.name for s in known_schemas()[1:]} == {
        "record.v1.avsc",
        "record.v2.avsc",
        "record.v3.avsc",
        "record.v4.avsc",
        "record.v5.avsc",
    }


@pytest.mark.parametrize("old", known_schemas()[1:], ids=lambda s: s.path.name)
def test_a_rejection_written_with_any_earlier_version_still_decodes(old: Any) -> None:
    rejected = Record(
        RecordType.COMMAND_REJECTION,
        ValueType.JOB,
        JobIntent.COMPLETE,
        JobValue(),
        key=11,
        rejection_type=RejectionType.NOT_FOUND,
        rejection_reason="job 11 not found",
    )
    decoded = CODEC.decode(RecordCodec(schemas=(old,)).encode(rejected))
    assert (decoded.rejection_type, decoded.rejection_reason, decoded.key) == (
        RejectionType.NOT_FOUND,
        "job 11 not found",
        11,
    )


def test_v6_added_user_tasks_after_every_earlier_symbol_and_branch() -> None:
    v5 = load_schema(contract_dir("avro") / "history" / "record.v5.avsc")
    assert "UserTaskValue" not in v5.canonical
    for enum in ("Intent", "ValueType"):
        old = named_types(json.loads(v5.path.read_text()), "enum")[enum]["symbols"]
        new = named_types(json.loads(current_schema().path.read_text()), "enum")[enum]["symbols"]
        assert new[: len(old)] == old  # a v5 record's symbol index means the same in v6
    task = UserTaskValue(
        user_task_key=7,
        assignee="ann",
        candidate_groups_list=("sales", "ops"),
        changed_attributes=("assignee",),
        action="claim",
    )
    claimed = Record(RecordType.EVENT, ValueType.USER_TASK, UserTaskIntent.ASSIGNED, task, key=7)
    assert CODEC.decode(CODEC.encode(claimed)) == claimed
    completed = Record(RecordType.COMMAND, ValueType.JOB, JobIntent.COMPLETE, JobValue(), key=6)
    assert CODEC.decode(RecordCodec(schemas=(v5,)).encode(completed)) == completed


def test_v5_added_the_job_intents_yield_and_yielded_after_every_earlier_symbol() -> None:
    v4 = load_schema(contract_dir("avro") / "history" / "record.v4.avsc")
    assert "YIELD" not in v4.canonical
    old = named_types(json.loads(v4.path.read_text()), "enum")["Intent"]["symbols"]
    new = named_types(json.loads(current_schema().path.read_text()), "enum")["Intent"]["symbols"]
    assert new[: len(old)] == old  # a v4 record's intent index means the same in v5
    yielded = Record(RecordType.EVENT, ValueType.JOB, JobIntent.YIELDED, JobValue(type="t"), key=5)
    assert CODEC.decode(CODEC.encode(yielded)) == yielded
    completed = Record(RecordType.COMMAND, ValueType.JOB, JobIntent.COMPLETE, JobValue(), key=6)
    assert CODEC.decode(RecordCodec(schemas=(v4,)).encode(completed)) == completed


def test_v4_added_the_rejection_type_resource_exhausted() -> None:
    v3 = load_schema(contract_dir("avro") / "history" / "record.v3.avsc")
    assert "RESOURCE_EXHAUSTED" not in v3.canonical
    rejected = Record(
        RecordType.COMMAND_REJECTION,
        ValueType.PROCESS_INSTANCE_CREATION,
        ProcessInstanceCreationIntent.CREATE,
        ProcessInstanceCreationValue(bpmn_process_id="order"),
        rejection_type=RejectionType.RESOURCE_EXHAUSTED,
        rejection_reason="partition 0 has 10,001 commands waiting",
    )
    assert CODEC.decode(CODEC.encode(rejected)) == rejected


def test_a_rejection_type_newer_than_the_readers_schema_reads_as_its_enum_default() -> None:
    # What the enum default buys: a consumer on this schema can read a later version's symbol.
    raw = json.loads(current_schema().path.read_text())
    rejection_enum = named_types(raw, "enum")["RejectionType"]
    rejection_enum["symbols"].append("SOME_LATER_TYPE")
    newer = fastavro.parse_schema(raw, named_schemas={})
    datum = {
        "recordType": "COMMAND_REJECTION",
        "valueType": "JOB",
        "intent": "COMPLETE",
        "timestamp": 0,
        "rejectionType": "SOME_LATER_TYPE",
        "value": ("io.partita.protocol.JobValue", {}),
    }
    out = io.BytesIO()
    fastavro.schemaless_writer(out, newer, datum)
    out.seek(0)
    read: Any = fastavro.schemaless_reader(out, newer, current_schema().schema)
    assert rejection_enum["default"] == "PROCESSING_ERROR" == read["rejectionType"]


# -- bad input --------------------------------------------------------------------------------


def _raw_body(datum: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, current_schema().schema, datum)
    return MAGIC + CODEC.fingerprint + out.getvalue()


def _datum(**overrides: Any) -> dict[str, Any]:
    datum = {
        "partitionId": 1,
        "key": -1,
        "sourceRecordPosition": -1,
        "recordType": "COMMAND",
        "valueType": "JOB",
        "intent": "COMPLETE",
        "timestamp": 0,
        "rejectionType": None,
        "rejectionReason": "",
        "engineVersion": "",
        "value": ("io.partita.protocol.JobValue", {}),
    }
    datum.update(overrides)
    return datum


@pytest.mark.parametrize(
    ("data", "error", "message"),
    [
        (b"\x00\x01" + bytes(20), errors.BadMagicError, "not the Avro single-object marker"),
        (b"\xc3\x01\x00", errors.BadMagicError, "shorter than the 10-byte"),
        (b'{"json": true}', errors.BadMagicError, "7b22"),
        (MAGIC + bytes(8) + b"\x02", errors.UnknownSchemaError, "0000000000000000"),
    ],
)
def test_headers_that_are_not_partita_records(
    data: bytes, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message) as raised:
        CODEC.decode(data, topic="partita.log", partition=0, offset=12)
    assert raised.value.where == "partita.log/0@12"  # type: ignore[attr-defined]


def test_a_null_value_is_a_typed_error() -> None:
    with pytest.raises(errors.BadMagicError, match="no value"):
        CODEC.decode(None)  # type: ignore[arg-type]


def test_truncated_body() -> None:
    with pytest.raises(errors.MalformedBodyError, match="does not decode"):
        CODEC.decode(valid_encoding()[:-3])


def test_trailing_bytes() -> None:
    with pytest.raises(errors.TrailingBytesError, match="2 bytes left"):
        CODEC.decode(valid_encoding() + b"\x00\x00")


def test_invalid_enum_symbol_index() -> None:
    data = bytearray(valid_encoding())
    # body starts with partitionId (zigzag 1 -> 0x02), key, sourceRecordPosition, then recordType
    body = data[10:]
    partition_and_keys = 1 + len(_zigzag(2251799813685249)) + 1
    body[partition_and_keys] = 0x7E  # enum index 63: RecordType has 3 symbols
    with pytest.raises(errors.MalformedBodyError):
        CODEC.decode(bytes(data[:10] + body))


def _zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def test_value_branch_must_match_value_type() -> None:
    data = _raw_body(_datum(valueType="MESSAGE", intent="PUBLISH"))
    with pytest.raises(
        errors.ValueTypeMismatchError, match="valueType is MESSAGE but the value is a JobValue"
    ):
        CODEC.decode(data)


def test_intent_must_belong_to_the_value_type() -> None:
    data = _raw_body(_datum(intent="PUBLISH"))
    with pytest.raises(
        errors.UnknownIntentError, match="PUBLISH is not an intent of JOB; valid: CREATED, COMPLETE"
    ):
        CODEC.decode(data)


def test_invalid_utf8_in_a_string() -> None:
    good = _raw_body(_datum(engineVersion="zz"))
    at = good.rindex(b"zz")  # in the body: the fingerprint before it may hold those bytes too
    bad = good[:at] + b"\xff\xfe" + good[at + 2 :]
    with pytest.raises(errors.MalformedBodyError, match=r"(?i)utf-8"):
        CODEC.decode(bad)


def test_oversized_records_are_refused_on_encode_and_decode() -> None:
    small = RecordCodec(max_record_bytes=1024)
    big = command(JobIntent.COMPLETE, JobValue(variables=json.dumps({"blob": "x" * 2000})))
    with pytest.raises(
        errors.RecordTooLargeError,
        match=r"JOB COMPLETE record is \d+ bytes, over the limit of 1024",
    ):
        small.encode(big)
    with pytest.raises(errors.RecordTooLargeError, match="over the limit"):
        small.decode(CODEC.encode(big), offset=3)


def test_encode_refuses_an_intent_of_another_value_type() -> None:
    wrong = Record(RecordType.COMMAND, ValueType.JOB, MessageIntent.PUBLISH, JobValue())
    with pytest.raises(errors.EncodeError, match="not an intent of JOB"):
        CODEC.encode(wrong)


def test_encode_refuses_a_value_of_another_value_type_or_no_value_class() -> None:
    mismatched = Record(RecordType.COMMAND, ValueType.MESSAGE, JobIntent.COMPLETE, JobValue())
    with pytest.raises(errors.EncodeError, match="value type MESSAGE does not match the value"):
        CODEC.encode(mismatched)
    not_a_value = Record(RecordType.COMMAND, ValueType.JOB, JobIntent.COMPLETE, {"retries": 3})  # type: ignore[arg-type]
    with pytest.raises(errors.EncodeError, match="dict is not a record value class"):
        CODEC.encode(not_a_value)


def test_encode_all_writes_what_encode_writes_for_each_record_in_order() -> None:
    records = [sample_record(value_type) for value_type in ValueType]
    assert CODEC.encode_all(records) == [CODEC.encode(record) for record in records]
    assert CODEC.encode_all([]) == []


def test_encode_all_refuses_what_encode_refuses_with_the_same_error() -> None:
    good = command(JobIntent.COMPLETE, JobValue())
    mismatched = Record(RecordType.COMMAND, ValueType.JOB, MessageIntent.PUBLISH, JobValue())
    with pytest.raises(errors.EncodeError, match="not an intent of JOB"):
        CODEC.encode_all([good, mismatched])
    wrong_class = Record(RecordType.COMMAND, ValueType.MESSAGE, JobIntent.COMPLETE, JobValue())
    with pytest.raises(errors.EncodeError, match="value type MESSAGE does not match the value"):
        CODEC.encode_all([wrong_class, good])
    small = RecordCodec(max_record_bytes=1024)
    big = command(JobIntent.COMPLETE, JobValue(variables=json.dumps({"blob": "x" * 2000})))
    with pytest.raises(errors.RecordTooLargeError, match="over the limit of 1024"):
        small.encode_all([good, big])


def test_encode_refuses_numbers_beyond_avro_int_that_other_languages_cannot_read() -> None:
    with pytest.raises(errors.EncodeError, match="does not fit an Avro int"):
        CODEC.encode(command(JobIntent.COMPLETE, JobValue(retries=2**31)))
    with pytest.raises(errors.EncodeError, match="does not fit an Avro int"):
        CODEC.encode(replace(command(JobIntent.COMPLETE, JobValue()), partition_id=-(2**31) - 1))


def test_encode_refuses_a_value_of_the_wrong_type_in_a_field() -> None:
    wrong = command(JobIntent.COMPLETE, JobValue(retries="three"))  # type: ignore[arg-type]
    with pytest.raises(errors.EncodeError, match="cannot encode JOB COMPLETE"):
        CODEC.encode(wrong)


@pytest.mark.parametrize("value_type", list(ValueType))
def test_encode_agreed_writes_what_encode_writes_for_a_decoded_record(
    value_type: ValueType,
) -> None:
    decoded = CODEC.decode(CODEC.encode(sample_record(value_type)), offset=4)
    normalised = replace(decoded, partition_id=2, timestamp=99, position=7)
    assert CODEC.encode_agreed(normalised) == CODEC.encode(normalised)


def test_encode_agreed_still_refuses_what_is_too_large_or_of_the_wrong_type() -> None:
    small = RecordCodec(max_record_bytes=1024)
    big = command(JobIntent.COMPLETE, JobValue(variables=json.dumps({"blob": "x" * 2000})))
    with pytest.raises(errors.RecordTooLargeError, match=r"is \d+ bytes, over the limit of 1024"):
        small.encode_agreed(big)
    wrong = replace(command(JobIntent.COMPLETE, JobValue()), key="7")  # type: ignore[arg-type]
    with pytest.raises(errors.EncodeError, match="cannot encode JOB COMPLETE"):
        CODEC.encode_agreed(wrong)
