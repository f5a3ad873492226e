"""Order-preserving key encodings for column families.

Byte order of the encoding equals the natural order of the keys, so RocksDB's iteration order
is the keys' order and composite keys support prefix scans by their leading components.

- long / int: fixed-width big-endian with the sign bit flipped (negatives sort first).
- str / bytes: self-delimiting: 0x00 escaped as 0x00 0xFF, terminated by 0x00 0x01, so "ab"
  and "a" + "b" never collide and "a" < "ab" < "b" holds in bytes.
- nil: no bytes (a column family with a single value).
- composite: the concatenation of its parts; parts may be composites (nesting).
- foreign key: encodes like the key it wraps and names the column family it references.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from partita.state.errors import EncodingError

K = TypeVar("K")

_LONG = struct.Struct(">Q")
_INT = struct.Struct(">I")
_LONG_FLIP = 1 << 63
_INT_FLIP = 1 << 31
_TERMINATOR = b"\x00\x01"
_ESCAPED_ZERO = b"\x00\xff"


class KeyCodec(Generic[K]):
    """Encodes keys of one shape. `read` decodes one key at `pos` and returns the next pos."""

    def encode(self, key: K) -> bytes:
        raise NotImplementedError

    def encoder(self) -> Callable[[K], bytes]:
        """`encode` as the fastest callable for this shape (what the column families call)."""
        return self.encode

    def read(self, data: bytes, pos: int) -> tuple[K, int]:
        raise NotImplementedError

    def prefix(self, *leading: Any) -> bytes:
        """The encoded leading components of a key, for `items(prefix)`; for a simple
        key, the key itself."""
        if len(leading) != 1:
            raise EncodingError(f"a prefix of a {self} key has exactly one component")
        return self.encode(leading[0])

    def decode(self, data: bytes) -> K:
        key, end = self.read(data, 0)
        if end != len(data):
            raise EncodingError(f"{len(data) - end} trailing bytes after a {self} key")
        return key

    def __repr__(self) -> str:
        return type(self).__name__


class LongKey(KeyCodec[int]):
    def encode(self, key: int) -> bytes:
        try:
            return _LONG.pack(key + _LONG_FLIP)
        except struct.error:
            raise EncodingError(f"{key!r} is not a 64-bit signed integer") from None

    def read(self, data: bytes, pos: int) -> tuple[int, int]:
        return _LONG.unpack_from(data, pos)[0] - _LONG_FLIP, pos + 8


class IntKey(KeyCodec[int]):
    def encode(self, key: int) -> bytes:
        try:
            return _INT.pack(key + _INT_FLIP)
        except struct.error:
            raise EncodingError(f"{key!r} is not a 32-bit signed integer") from None

    def read(self, data: bytes, pos: int) -> tuple[int, int]:
        return _INT.unpack_from(data, pos)[0] - _INT_FLIP, pos + 4


def _escape(raw: bytes) -> bytes:
    return raw.replace(b"\x00", _ESCAPED_ZERO) + _TERMINATOR


def _unescape(data: bytes, pos: int) -> tuple[bytes, int]:
    out = bytearray()
    while True:
        zero = data.find(b"\x00", pos)
        if zero < 0 or zero + 1 >= len(data):
            raise EncodingError("unterminated string or bytes key component")
        out += data[pos:zero]
        marker = data[zero + 1]
        if marker == 0x01:
            return bytes(out), zero + 2
        if marker != 0xFF:
            raise EncodingError(f"invalid escape 00 {marker:02x} in a key component")
        out.append(0)
        pos = zero + 2


class StrKey(KeyCodec[str]):
    def encode(self, key: str) -> bytes:
        if not isinstance(key, str):
            raise EncodingError(f"{key!r} is not a string")
        return _escape(key.encode("utf-8"))

    def read(self, data: bytes, pos: int) -> tuple[str, int]:
        raw, end = _unescape(data, pos)
        return raw.decode("utf-8"), end


class BytesKey(KeyCodec[bytes]):
    def encode(self, key: bytes) -> bytes:
        if not isinstance(key, bytes | bytearray):
            raise EncodingError(f"{key!r} is not bytes")
        return _escape(bytes(key))

    def read(self, data: bytes, pos: int) -> tuple[bytes, int]:
        return _unescape(data, pos)


class NilKey(KeyCodec[None]):
    def encode(self, key: None) -> bytes:
        return b""

    def read(self, data: bytes, pos: int) -> tuple[None, int]:
        return None, pos


class CompositeKey(KeyCodec[tuple[Any, ...]]):
    """A tuple key; `prefix(*leading)` encodes the leading components for prefix scans."""

    def __init__(self, *parts: KeyCodec[Any]) -> None:
        if len(parts) < 2:
            raise ValueError("a composite key has at least two parts")
        self.parts = parts

    def encode(self, key: tuple[Any, ...]) -> bytes:
        if not isinstance(key, tuple) or len(key) != len(self.parts):
            raise EncodingError(f"{key!r} is not a {len(self.parts)}-tuple for {self}")
        return b"".join(part.encode(item) for part, item in zip(self.parts, key, strict=True))

    def encoder(self) -> Callable[[tuple[Any, ...]], bytes]:
        """For two and three parts, their encoders called directly (no generator, no join)."""
        encoders = [part.encoder() for part in self.parts]
        if len(encoders) == 2:
            first, second = encoders

            def encode_pair(key: tuple[Any, ...]) -> bytes:
                if type(key) is not tuple or len(key) != 2:
                    return self.encode(key)  # the error, named
                return first(key[0]) + second(key[1])

            return encode_pair
        if len(encoders) == 3:
            first, second, third = encoders

            def encode_triple(key: tuple[Any, ...]) -> bytes:
                if type(key) is not tuple or len(key) != 3:
                    return self.encode(key)
                return first(key[0]) + second(key[1]) + third(key[2])

            return encode_triple
        return self.encode

    def prefix(self, *leading: Any) -> bytes:
        if len(leading) == 1:  # the common case: all entries of one scope, one owner
            return self.parts[0].encode(leading[0])
        if not 0 < len(leading) <= len(self.parts):
            raise EncodingError(f"a prefix of {self} has 1..{len(self.parts)} components")
        return b"".join(part.encode(item) for part, item in zip(self.parts, leading, strict=False))

    def read(self, data: bytes, pos: int) -> tuple[tuple[Any, ...], int]:
        items = []
        for part in self.parts:
            item, pos = part.read(data, pos)
            items.append(item)
        return tuple(items), pos

    def __repr__(self) -> str:
        return f"CompositeKey({', '.join(map(repr, self.parts))})"


class ForeignKey(KeyCodec[K]):
    """A key that refers to an entry of another column family (a marker, as in Zeebe)."""

    def __init__(self, inner: KeyCodec[K], references: str) -> None:
        self.inner = inner
        self.references = references

    def encode(self, key: K) -> bytes:
        return self.inner.encode(key)

    def encoder(self) -> Callable[[K], bytes]:
        return self.inner.encoder()

    def read(self, data: bytes, pos: int) -> tuple[K, int]:
        return self.inner.read(data, pos)

    def __repr__(self) -> str:
        return f"ForeignKey({self.inner!r} -> {self.references})"
