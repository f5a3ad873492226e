"""Property tests of tests/unit/state/test_keys_values.py (property tests live under tests/fuzz)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from partita.state.keys import BytesKey, CompositeKey, IntKey, LongKey, StrKey

LONGS = st.integers(min_value=-(2**63), max_value=2**63 - 1)
INTS = st.integers(min_value=-(2**31), max_value=2**31 - 1)


@given(st.lists(LONGS, min_size=2))
def test_long_encoding_preserves_order(values: list[int]) -> None:
    codec = LongKey()
    assert sorted(values, key=codec.encode) == sorted(values)
    assert all(codec.decode(codec.encode(v)) == v for v in values)


@given(st.lists(INTS, min_size=2))
def test_int_encoding_preserves_order(values: list[int]) -> None:
    codec = IntKey()
    assert sorted(values, key=codec.encode) == sorted(values)


@given(st.lists(st.text(), min_size=2))
def test_string_encoding_preserves_utf8_order_and_round_trips(values: list[str]) -> None:
    codec = StrKey()
    assert sorted(values, key=codec.encode) == sorted(values, key=lambda s: s.encode())
    assert all(codec.decode(codec.encode(v)) == v for v in values)


@given(st.lists(st.tuples(st.binary(), LONGS, st.text()), min_size=2))
def test_composite_keys_order_by_components(values: list[tuple[bytes, int, str]]) -> None:
    codec = CompositeKey(BytesKey(), LongKey(), StrKey())
    assert sorted(values, key=codec.encode) == sorted(
        values, key=lambda t: (t[0], t[1], t[2].encode())
    )
    assert all(codec.decode(codec.encode(v)) == v for v in values)


@given(st.tuples(LONGS, st.text(), LONGS), st.tuples(st.text(), LONGS))
def test_the_column_families_fast_encoders_encode_alike(
    triple: tuple[int, str, int], pair: tuple[str, int]
) -> None:
    """`encoder()` (what column families call) and `prefix` of one component give the
    bytes `encode` gives, for every shape the column families use."""
    three = CompositeKey(LongKey(), StrKey(), LongKey())
    two = CompositeKey(StrKey(), LongKey())
    assert three.encoder()(triple) == three.encode(triple)
    assert two.encoder()(pair) == two.encode(pair)
    assert three.prefix(triple[0]) == LongKey().encode(triple[0])
    assert three.encode(triple).startswith(three.prefix(triple[0], triple[1]))
    assert two.encode(pair).startswith(two.prefix(pair[0]))
