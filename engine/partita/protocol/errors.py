"""Typed errors of the record protocol. Each names the problem and, when known, where the bytes
came from (topic/partition/offset), so a rejection or a log line can point at the record."""

from __future__ import annotations

from partita.errors import PartitaError


class ProtocolError(PartitaError):
    """Base of protocol errors. `where` is e.g. `partita.log/2@1234`, or empty when unknown."""

    def __init__(self, message: str, where: str = "") -> None:
        self.reason = message
        self.where = where
        super().__init__(f"{message} (at {where})" if where else message)


class DecodeError(ProtocolError):
    """Bytes that are not a valid Partita record."""


class BadMagicError(DecodeError):
    """The bytes do not start with Avro single-object encoding's marker C3 01."""


class UnknownSchemaError(DecodeError):
    """The writer schema's fingerprint is not one this engine knows."""


class MalformedBodyError(DecodeError):
    """The Avro body does not decode: truncated, invalid enum index or union branch, bad UTF-8."""


class TrailingBytesError(DecodeError):
    """The Avro body decoded but bytes were left over."""


class ValueTypeMismatchError(DecodeError):
    """The `valueType` field and the branch of `value` disagree."""


class UnknownIntentError(DecodeError):
    """The intent is not one of the record's value type."""


class RecordTooLargeError(ProtocolError):
    """A record is larger than the configured maximum (encode or decode)."""


class EncodeError(ProtocolError):
    """A record cannot be encoded: a field has the wrong type or is out of range."""


class InvalidKeyError(ProtocolError):
    """A key does not encode a partition (negative, or partition id out of range)."""


def location(topic: str | None, partition: int | None, offset: int | None) -> str:
    """`topic/partition@offset` with the parts that are known."""
    if topic is None and partition is None and offset is None:
        return ""
    text = topic or "?"
    if partition is not None:
        text += f"/{partition}"
    if offset is not None:
        text += f"@{offset}"
    return text
