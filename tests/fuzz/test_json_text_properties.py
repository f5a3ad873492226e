"""Property tests of partita.protocol.json_text against the standard library's json: the same
values from every JSON text both accept, and texts that read back to the same value."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from partita.protocol import json_text
from tests.support.fuzz_profiles import fuzz_settings

_EXACT = st.none() | st.booleans() | st.integers(-(10**40), 10**40) | st.text()
_FLOATS = st.floats(allow_nan=False, allow_infinity=False)


def _documents(scalars: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        scalars,
        lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(), children),
        max_leaves=30,
    )


JSON_VALUES = _documents(_EXACT | _FLOATS)


def _same(a: Any, b: Any) -> bool:
    """Equal, with -0.0 and 0.0 told apart (JSON keeps the sign)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@fuzz_settings()
@given(JSON_VALUES, st.booleans())
def test_every_text_the_standard_library_writes_reads_back_to_the_same_value(
    value: Any, indent: bool
) -> None:
    text = json.dumps(value, ensure_ascii=indent, indent=2 if indent else None)
    assert _same(json_text.parse(text), json.loads(text))
    assert _same(json_text.parse(text.encode()), json.loads(text))


@fuzz_settings()
@given(JSON_VALUES)
def test_what_it_writes_reads_back_the_same_with_either_reader(value: Any) -> None:
    text = json_text.write(value)
    assert _same(json_text.parse(text), value)
    assert _same(json.loads(text), value)


@fuzz_settings()
@given(_documents(_EXACT))
def test_without_floats_it_writes_the_standard_librarys_compact_text(value: Any) -> None:
    """(Floats may be spelt differently: `1e16` for `1e+16`, the same double.)"""
    assert json_text.write(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@fuzz_settings()
@given(st.text(max_size=40))
def test_any_text_is_read_or_refused_with_a_value_error(text: str) -> None:
    try:
        json_text.parse(text)
    except ValueError as error:
        assert str(error)
