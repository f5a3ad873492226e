from __future__ import annotations

from enum import Enum

import pytest
from msgspec import Struct

from partita.state.errors import EncodingError
from partita.state.keys import CompositeKey, IntKey, LongKey, NilKey, StrKey
from partita.state.values import ValueCodec


def test_strings_have_no_prefix_collisions() -> None:
    pair = CompositeKey(StrKey(), StrKey())
    assert pair.encode(("ab", "")) != pair.encode(("a", "b"))
    assert not pair.encode(("ab", "c")).startswith(pair.prefix("a"))
    assert pair.encode(("a", "zzz")).startswith(pair.prefix("a"))
    assert StrKey().decode(StrKey().encode("a\x00b")) == "a\x00b"


def test_nested_composites_and_nil() -> None:
    inner = CompositeKey(LongKey(), StrKey())
    outer = CompositeKey(inner, IntKey())
    assert outer.decode(outer.encode(((7, "x"), 3))) == ((7, "x"), 3)
    assert outer.encode(((7, "x"), 3)).startswith(outer.prefix((7, "x")))
    assert NilKey().encode(None) == b""


def test_bad_keys_are_typed_errors() -> None:
    with pytest.raises(EncodingError, match="not a 64-bit"):
        LongKey().encode(2**63)
    with pytest.raises(EncodingError, match="not a 2-tuple"):
        CompositeKey(LongKey(), LongKey()).encode((1,))
    with pytest.raises(EncodingError, match="trailing"):
        LongKey().decode(bytes(9))


class Color(Enum):
    RED = "RED"
    BLUE = "BLUE"


class Old(Struct, frozen=True, array_like=True):
    name: str
    size: int


class New(Struct, frozen=True, array_like=True):
    name: str
    size: int
    color: Color = Color.RED
    tags: tuple[str, ...] = ()
    headers: dict[str, str] = {}


def test_values_are_versioned_deterministic_and_round_trip() -> None:
    codec: ValueCodec[New] = ValueCodec(New)
    value = New("a", 2, Color.BLUE, ("x", "y"), {"b": "1", "a": "2"})
    data = codec.encode(value)
    assert data[0] == 1
    assert codec.decode(data) == value
    assert codec.encode(New("a", 2, Color.BLUE, ("x", "y"), {"a": "2", "b": "1"})) == data
    assert b"name" not in data  # an array of fields: names are not stored


def test_a_value_written_before_fields_were_added_decodes_with_defaults() -> None:
    old = ValueCodec(Old).encode(Old("a", 2))
    assert ValueCodec(New).decode(old) == New("a", 2)


def test_a_value_written_by_a_newer_build_decodes_without_its_extra_fields() -> None:
    newer = ValueCodec(New).encode(New("a", 2, Color.BLUE))
    assert ValueCodec(Old).decode(newer) == Old("a", 2)


def test_an_unknown_value_version_is_a_typed_error() -> None:
    with pytest.raises(EncodingError, match="expects value version 2, found 1"):
        ValueCodec(Old, version=2).decode(ValueCodec(Old).encode(Old("a", 1)))


def test_a_value_of_another_type_is_refused_on_write_not_on_read() -> None:
    with pytest.raises(EncodingError, match="it is a dict, not a Old"):
        ValueCodec(Old).encode({"name": "a", "size": 1})  # type: ignore[arg-type]
    with pytest.raises(EncodingError, match="it is a str, not a int"):
        ValueCodec(int).encode("7")  # type: ignore[arg-type]


def test_corrupt_or_mistyped_bytes_are_a_typed_error_naming_the_type() -> None:
    with pytest.raises(EncodingError, match=r"ValueCodec\(Old v1\).*Expected `int`"):
        ValueCodec(Old).decode(
            b"\x01" + ValueCodec(New).encode(New("a", 2))[1:].replace(b"\x02", b"\xa1x")
        )
    with pytest.raises(EncodingError, match=r"ValueCodec\(Old v1\)"):
        ValueCodec(Old).decode(b"\x01\xff")
