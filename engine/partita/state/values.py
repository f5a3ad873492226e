"""The value encoding of every column family: `version byte + MessagePack`, in one place.

Values are typed: a number, a string, nothing, or one of the stored types of
`partita.state.stored` (MessagePack arrays of their fields). Encoding is deterministic (dict
keys sorted), so equal state gives equal bytes, which the state digest relies on. The version
byte names the layout of the column family's values; a value of another version is refused
with the column family's name rather than misread (`partita.state.migrate` upgrades a store).
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import msgspec

from partita.state.errors import EncodingError

V = TypeVar("V")

_ENCODER = msgspec.msgpack.Encoder(order="deterministic")


class ValueCodec(Generic[V]):
    """Encodes values of one type: `version byte + MessagePack`."""

    __slots__ = ("_decoder", "_prefix", "_python_type", "value_type", "version")

    def __init__(self, value_type: Any, version: int = 1) -> None:
        if not 0 <= version <= 255:
            raise ValueError("version must fit one byte")
        self.value_type = value_type
        self.version = version
        self._prefix = bytes([version])
        self._python_type: type = type(None) if value_type is None else value_type
        try:
            self._decoder: msgspec.msgpack.Decoder[V] = msgspec.msgpack.Decoder(value_type)
        except TypeError as exc:
            raise TypeError(f"no storable encoding for {value_type!r}: {exc}") from None

    def check(self, value: V) -> V:
        """`value`, if it is of this codec's type (a write is refused when made, not when the
        batch commits)."""
        if not isinstance(value, self._python_type):
            raise EncodingError(
                f"cannot encode {value!r} as {self}: it is a {type(value).__name__},"
                f" not a {self._python_type.__name__}"
            )
        return value

    def encode(self, value: V) -> bytes:
        return self.encode_checked(self.check(value))

    def encode_checked(self, value: V) -> bytes:
        """`encode` of a value `check` already passed (the overlay checks on write)."""
        try:
            return self._prefix + _ENCODER.encode(value)
        except (TypeError, ValueError, OverflowError) as exc:
            raise EncodingError(f"cannot encode {value!r} as {self}: {exc}") from None

    def decode(self, data: bytes) -> V:
        if not data or data[0] != self.version:
            found = data[0] if data else None
            raise EncodingError(f"{self} expects value version {self.version}, found {found}")
        try:
            return self._decoder.decode(memoryview(data)[1:])
        except msgspec.DecodeError as exc:  # ValidationError included
            raise EncodingError(f"cannot decode a value as {self}: {exc}") from None

    def __repr__(self) -> str:
        name = getattr(self.value_type, "__name__", str(self.value_type))
        return f"ValueCodec({name} v{self.version})"
