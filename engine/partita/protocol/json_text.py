"""Variables as JSON text, the way records carry them: one decoder and one encoder for the
whole engine (msgspec's, several times faster than the standard library's on the hot path).

- `parse` accepts exactly the JSON of RFC 8259, nothing Python adds: `NaN`, `Infinity` and
  numbers beyond a double (`1e999`) are refused, and so are lone surrogates (`"\\ud800"`).
  Integers keep every digit (no 64-bit limit) up to Python's 4,300-digit conversion limit.
  Every refusal is a `ValueError` that says what is wrong and where (`msgspec.DecodeError`
  is one); a document nested past the interpreter's recursion limit raises `RecursionError`.
- `write` is compact, UTF-8 (no `\\uXXXX` for printable text), keys in insertion order.
  Whatever `parse` returns it writes back; a float is written in its shortest round-trip form
  (`1e16`, `0.00001`), which may differ in spelling, never in value, from the standard
  library's (`1e+16`, `1e-05`): compare values, not texts, across the two.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

_DECODER = msgspec.json.Decoder()
_ENCODER = msgspec.json.Encoder()


def parse(text: str | bytes) -> Any:
    """The value of one JSON text; a ValueError naming the problem and where otherwise."""
    try:
        return _DECODER.decode(text)
    except msgspec.DecodeError as error:
        raise ValueError(_reason(text, error)) from None


def write(value: Any) -> str:
    """The compact JSON text of a JSON value (dicts with str keys, lists, str, int, float,
    bool, None)."""
    return _ENCODER.encode(value).decode()


def _reason(text: str | bytes, error: msgspec.DecodeError) -> str:
    """What is wrong with a refused text, in the standard library's words (line and column)
    where it refuses it too; off the hot path."""
    try:
        json.loads(text, parse_constant=_refuse_constant)
    except ValueError as stdlib_error:
        return str(stdlib_error)
    except RecursionError:
        return "nested too deeply"
    if isinstance(error, msgspec.ValidationError):  # 1e999 and other numbers past a double
        return "a number out of range (beyond a 64-bit float)"
    return "a lone UTF-16 surrogate escape (\\ud800-\\udfff without its pair)"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
