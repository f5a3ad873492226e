"""Avro single-object encoding of records: `C3 01`, the writer schema's CRC-64-AVRO fingerprint
(8 bytes, little-endian), then the Avro binary body.

Guarantees:
- `encode` writes with the current schema; `decode` accepts any known schema version, resolving
  older writer schemas into the current one.
- Every failure is a typed `ProtocolError` naming the problem and where the bytes came from;
  no other exception escapes `decode` for any input.
- Parsed schemas and converters are built once per codec; the per-record path does no parsing.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from io import BytesIO
from typing import Any, NoReturn

from fastavro import schemaless_reader

from partita.protocol.convert import RecordConverter, short_name
from partita.protocol.decoder import compile_decoder
from partita.protocol.encoder import compile_encoder
from partita.protocol.enums import RecordType, RejectionType, ValueType
from partita.protocol.errors import (
    BadMagicError,
    EncodeError,
    MalformedBodyError,
    RecordTooLargeError,
    TrailingBytesError,
    UnknownIntentError,
    UnknownSchemaError,
    ValueTypeMismatchError,
    location,
)
from partita.protocol.intents import INTENTS_BY_VALUE_TYPE, intent_for
from partita.protocol.native import (
    native_all_encoder,
    native_decoder,
    native_encoder,
    native_record_decoder,
)
from partita.protocol.records import Record
from partita.protocol.schemas import WriterSchema, current_schema, known_schemas
from partita.protocol.values import VALUE_TYPES, RecordValue

_VALUE_TYPES = {member.name: member for member in ValueType}
_ENUMS: tuple[type[Enum], ...] = (
    RecordType,
    ValueType,
    RejectionType,
    *INTENTS_BY_VALUE_TYPE.values(),
)
_NAMES: dict[object, str] = {member: member.name for enum in _ENUMS for member in enum}
"""Enum member -> symbol without the Enum property machinery (hot path)."""
_RECORD_TYPES = {member.name: member for member in RecordType}
_REJECTION_TYPES = {member.name: member for member in RejectionType}
_TYPES: dict[tuple[str, str, type[Any]], tuple[ValueType, Any]] = {
    (value_type.name, intent.name, cls): (value_type, intent)
    for cls, value_type in VALUE_TYPES.items()
    for intent in INTENTS_BY_VALUE_TYPE[value_type]
}
"""(value type symbol, intent symbol, value class) -> (value type, intent), for every
combination a record may have: one lookup checks both and finds both."""
_VALUE_CLASS_OF_INTENTS: dict[type[Any], type[Any]] = {
    INTENTS_BY_VALUE_TYPE[value_type]: cls for cls, value_type in VALUE_TYPES.items()
}
"""Intent enum -> the value class of its value type (one each): with `VALUE_TYPES`, two lookups
by type check a record's value type, intent and value class together (the hot path)."""

MAGIC = b"\xc3\x01"
HEADER_SIZE = 10
LOG_TOPIC_MAX_BYTES = 4 * 1024 * 1024
"""The log topic's `max.message.bytes` (topics/topics.toml): its largest record batch."""
DEFAULT_MAX_RECORD_BYTES = LOG_TOPIC_MAX_BYTES - 64 * 1024
"""The largest record value: the topic's limit less room for the record batch envelope, the key
and the headers, so a record this size is never refused by Kafka."""
PRODUCER_MAX_BYTES = 2 * LOG_TOPIC_MAX_BYTES
"""librdkafka's `message.max.bytes` for producers of the log (its default is 1 MB); the codec
refuses oversized records first, with a message that says which."""


def _assemble(
    fields: tuple[Any, ...], value_type: ValueType, intent: Any, offset: int | None
) -> Record:
    """The Record of an envelope the current schema's decoder returned, whose value type and
    intent are checked."""
    (
        partition_id,
        key,
        source_position,
        record_type,
        _,
        _,
        record_version,
        timestamp,
        rejection,
        rejection_reason,
        engine_version,
        (_, value),
    ) = fields
    return Record(
        _RECORD_TYPES[record_type],
        value_type,
        intent,
        value,
        key,
        partition_id,
        source_position,
        timestamp,
        None if rejection is None else _REJECTION_TYPES[rejection],
        rejection_reason,
        engine_version,
        record_version,
        -1 if offset is None else offset,
    )


class RecordCodec:
    """Encodes and decodes records. Thread-compatible: no mutable state after construction."""

    def __init__(
        self,
        *,
        schemas: tuple[WriterSchema, ...] | None = None,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
        native: bool | None = None,
    ) -> None:
        """`native`: encode and decode with the compiled codec (True: required, False: never,
        None: as `PARTITA_NATIVE` says)."""
        schemas = schemas or known_schemas()
        self.current = schemas[0] if schemas else current_schema()
        self.max_record_bytes = max_record_bytes
        self._prefix = MAGIC + self.current.fingerprint_bytes
        encode_native = native_encoder(self.current.raw, Record, self._prefix, native)
        pure_encode = compile_encoder(self.current.raw, Record)
        prefix = self._prefix
        self._encode = encode_native or (lambda record: prefix + pure_encode(record))
        batch = native_all_encoder(
            self.current.raw,
            Record,
            self._prefix,
            {intent: (value_type, cls) for (_, _, cls), (value_type, intent) in _TYPES.items()},
            max_record_bytes,
            native,
        )
        self._encode_all = None if batch is None else batch.encode_all
        self.produce_all = None if batch is None else batch.produce_all
        """The compiled codec's loop over a batch's (partition, record) pairs that encodes
        them all, then hands each to a producer's `produce` (native/src/produce.rs says how);
        None without it. `partita.stream.processing.transaction` writes a batch's records with
        it."""
        compiled = native_decoder(self.current.raw, native)
        self.native = compiled is not None
        """Whether records of the current schema are encoded and decoded in compiled code
        (`PARTITA_NATIVE`)."""
        self._decode_body = compiled or compile_decoder(self.current.raw)
        decode_native = native_record_decoder(
            self.current.raw,
            Record,
            _TYPES,
            {"record_type": _RECORD_TYPES, "rejection_type": _REJECTION_TYPES},
            self._prefix,
            max_record_bytes,
            native,
        )
        self._decode_record: Callable[[bytes, int], Record | None] = (
            decode_native or self._decode_record_pure
        )
        self.compiled: tuple[Any, Any] | None = (
            (decode_native.__self__, batch)  # type: ignore[attr-defined]  # the bound Decoder
            if decode_native is not None and batch is not None
            else None
        )
        """The compiled record decoder and batch encoder (`partita.protocol.native`), for
        compiled loops built on them (`partita.stream.processing.admission`); None without them."""
        self._writers: dict[bytes, WriterSchema] = {s.fingerprint_bytes: s for s in schemas}
        self._values: dict[str, RecordConverter] = {}
        self._by_class: dict[type[Any], RecordConverter] = {}
        registry: dict[str, RecordConverter] = {}
        value_field = next(f for f in self.current.schema["fields"] if f["name"] == "value")
        for branch in value_field["type"]:
            converter = RecordConverter(branch, registry)
            self._values[branch["name"]] = converter
            self._by_class[converter.cls] = converter

    @property
    def fingerprint(self) -> bytes:
        """The little-endian fingerprint of the schema `encode` writes."""
        return self.current.fingerprint_bytes

    # -- encode -----------------------------------------------------------------------------

    def encode(self, record: Record) -> bytes:
        """The single-object encoding of `record`; EncodeError / RecordTooLargeError if invalid."""
        cls = type(record.value)
        if (
            _VALUE_CLASS_OF_INTENTS.get(type(record.intent)) is not cls
            or VALUE_TYPES.get(cls) is not record.value_type
        ):
            self._refuse(record)
        try:
            data = self._encode(record)
        except (TypeError, ValueError, OverflowError, AttributeError, KeyError) as exc:
            raise EncodeError(
                f"cannot encode {record.value_type.name} {record.intent.name}:"
                f" {type(exc).__name__}: {exc}"
            ) from None
        if len(data) > self.max_record_bytes:
            raise RecordTooLargeError(
                f"{record.value_type.name} {record.intent.name} record is {len(data)} bytes,"
                f" over the limit of {self.max_record_bytes}"
            )
        return data

    def encode_agreed(self, record: Record) -> bytes:
        """`encode` of a record whose value type, intent and value class are known to go
        together: one this codec decoded, with only its other fields replaced since (a client
        command's copy for the log). It skips that check, not the size limit."""
        try:
            data = self._encode(record)
        except (TypeError, ValueError, OverflowError, AttributeError, KeyError):
            return self.encode(record)  # says what is wrong
        if len(data) > self.max_record_bytes:
            return self.encode(record)  # RecordTooLargeError, saying by how much
        return data

    def encode_all(self, records: list[Record]) -> list[bytes]:
        """`encode` of each of `records`, in one call to the compiled codec when there is one
        (a batch's records: the per-record checks and call cost less in one); a record
        `encode` refuses raises what `encode` raises."""
        encode_all = self._encode_all
        if encode_all is not None:
            try:
                return encode_all(records)
            except Exception:  # the per-record path below says which record and why
                pass
        return [self.encode(record) for record in records]

    def _refuse(self, record: Record) -> NoReturn:
        """Why `encode` cannot take `record` (its value, value type and intent do not go
        together)."""
        converter = self._by_class.get(type(record.value))
        if converter is None:
            raise EncodeError(f"{type(record.value).__name__} is not a record value class")
        if converter.value_type is not record.value_type:
            raise EncodeError(
                f"value type {record.value_type.name} does not match the value"
                f" {converter.cls.__name__}"
            )
        if type(record.intent) is not INTENTS_BY_VALUE_TYPE[record.value_type]:
            raise EncodeError(
                f"intent {record.intent!r} is not an intent of {record.value_type.name}"
            )
        raise EncodeError(f"cannot encode {record.value_type.name} {record.intent!r}")

    def value_fields(self, value: RecordValue) -> dict[str, Any]:
        """The value as the Avro schema names it: camelCase fields, enum names, nested
        records as dicts, `bytes` as bytes (what `docs/internals/records.md` documents)."""
        converter = self._by_class.get(type(value))
        if converter is None:
            raise EncodeError(f"{type(value).__name__} is not a record value class")
        return converter.to_avro(value)

    # -- decode -----------------------------------------------------------------------------

    def decode(
        self,
        data: bytes,
        *,
        topic: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
    ) -> Record:
        """The record encoded in `data`; `offset`, when given, becomes its position.

        Raises only DecodeError subclasses and RecordTooLargeError.
        """
        # The path of nearly every record: the current schema, well formed, within the limit.
        # Anything else takes the checked path below, which decodes again and says what is
        # wrong.
        if type(data) is bytes:
            try:
                record = self._decode_record(data, -1 if offset is None else offset)
            except Exception:  # the checked path below names the failure
                record = None
            if record is not None:
                return record
        return self._decode_checked(data, topic, partition, offset)

    def _decode_record_pure(self, data: bytes, position: int) -> Record | None:
        """`native_record_decoder`'s decode in Python: the record in `data` if it is one of
        the current schema, well formed, within the limit, else None."""
        if data[:HEADER_SIZE] != self._prefix or len(data) > self.max_record_bytes:
            return None
        fields, end = self._decode_body(data, HEADER_SIZE)
        if end != len(data):
            return None
        types = _TYPES.get((fields[4], fields[5], type(fields[11][1])))
        return None if types is None else _assemble(fields, types[0], types[1], position)

    def _decode_checked(
        self, data: bytes, topic: str | None, partition: int | None, offset: int | None
    ) -> Record:
        if data is None or len(data) < HEADER_SIZE or data[:2] != MAGIC:
            raise self._bad_magic(data, topic, partition, offset)
        if len(data) > self.max_record_bytes:
            raise RecordTooLargeError(
                f"record is {len(data)} bytes, over the limit of {self.max_record_bytes}",
                location(topic, partition, offset),
            )
        fingerprint = bytes(data[2:HEADER_SIZE])
        writer = self._writers.get(fingerprint)
        if writer is None:
            known = ", ".join(sorted(w.hex() for w in self._writers))
            raise UnknownSchemaError(
                f"unknown writer schema fingerprint {fingerprint.hex()} (little-endian"
                f" CRC-64-AVRO); this engine knows {known}."
                " Produce with a schema from avro/ (or add the new version to avro/history/).",
                location(topic, partition, offset),
            )
        if writer is self.current:
            return self._decode_current(bytes(data), topic, partition, offset)
        stream = BytesIO(data)
        stream.seek(HEADER_SIZE)
        try:  # an older writer schema: fastavro resolves it into the current one
            datum = schemaless_reader(
                stream, writer.schema, self.current.schema, return_record_name=True
            )
        except Exception as exc:  # any malformed body must become a typed error
            raise MalformedBodyError(
                f"Avro body does not decode: {type(exc).__name__}: {exc}",
                location(topic, partition, offset),
            ) from None
        if stream.tell() != len(data):
            raise TrailingBytesError(
                f"{len(data) - stream.tell()} bytes left after the Avro body",
                location(topic, partition, offset),
            )
        return self._record(datum, topic, partition, offset)  # type: ignore[arg-type]

    def _decode_current(
        self, data: bytes, topic: str | None, partition: int | None, offset: int | None
    ) -> Record:
        try:
            fields, end = self._decode_body(data, HEADER_SIZE)
        except Exception as exc:  # any malformed body must become a typed error
            raise MalformedBodyError(
                f"Avro body does not decode: {type(exc).__name__}: {exc}",
                location(topic, partition, offset),
            ) from None
        if end != len(data):
            raise TrailingBytesError(
                f"{len(data) - end} bytes left after the Avro body",
                location(topic, partition, offset),
            )
        value_type_name, intent_name, (branch, value) = fields[4], fields[5], fields[11]
        value_type = _VALUE_TYPES[value_type_name]
        if VALUE_TYPES[type(value)] is not value_type:
            raise ValueTypeMismatchError(
                f"valueType is {value_type.name} but the value is a {short_name(branch)}",
                location(topic, partition, offset),
            )
        intent = intent_for(value_type, intent_name)
        if intent is None:
            raise UnknownIntentError(
                f"{intent_name} is not an intent of {value_type.name}; valid:"
                f" {', '.join(m.name for m in INTENTS_BY_VALUE_TYPE[value_type])}",
                location(topic, partition, offset),
            )
        return _assemble(fields, value_type, intent, offset)

    def _record(
        self, datum: dict[str, Any], topic: str | None, partition: int | None, offset: int | None
    ) -> Record:
        value_type = _VALUE_TYPES[datum["valueType"]]
        branch, value_data = datum["value"]
        converter = self._values.get(branch)
        if converter is None or converter.value_type is not value_type:
            raise ValueTypeMismatchError(
                f"valueType is {value_type.name} but the value is a {short_name(branch)}",
                location(topic, partition, offset),
            )
        intent = intent_for(value_type, datum["intent"])
        if intent is None:
            raise UnknownIntentError(
                f"{datum['intent']} is not an intent of {value_type.name}; valid:"
                f" {', '.join(m.name for m in INTENTS_BY_VALUE_TYPE[value_type])}",
                location(topic, partition, offset),
            )
        rejection = datum["rejectionType"]
        try:
            value = converter.from_avro(value_data)
        except KeyError as exc:  # an enum symbol this engine does not know (newer writer)
            raise MalformedBodyError(
                f"{short_name(branch)} has an unknown symbol {exc}",
                location(topic, partition, offset),
            ) from None
        return Record(
            _RECORD_TYPES[datum["recordType"]],
            value_type,
            intent,
            value,
            datum["key"],
            datum["partitionId"],
            datum["sourceRecordPosition"],
            datum["timestamp"],
            None if rejection is None else RejectionType[rejection],
            datum["rejectionReason"],
            datum["engineVersion"],
            datum["recordVersion"],
            -1 if offset is None else offset,
        )

    def _bad_magic(
        self, data: bytes | None, topic: str | None, partition: int | None, offset: int | None
    ) -> BadMagicError:
        where = location(topic, partition, offset)
        if data is None:
            return BadMagicError("record has no value (null)", where)
        if len(data) < HEADER_SIZE:
            return BadMagicError(
                f"record is {len(data)} bytes, shorter than the 10-byte single-object header", where
            )
        return BadMagicError(
            f"record starts with {bytes(data[:2]).hex()}, not the Avro single-object marker c301",
            where,
        )
