"""FEEL values <-> JSON values. Numbers are Decimals inside FEEL (0.1 + 0.2 = 0.3, as in
Zeebe); results become int when integral, float otherwise.

Only values strict JSON can hold cross the boundary: a NaN or infinite number (which Python's
`json` reads from `NaN`/`Infinity`) becomes null going in, and a number no JSON reader could
take (not finite, or an integer of more than MAX_INTEGER_DIGITS digits) becomes null coming out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from partita.feel.temporal import is_temporal
from partita.feel.temporal import to_text as temporal_text
from partita.feel.temporal import type_of as temporal_type

MAX_INTEGER_DIGITS = 4000
"""Below Python's limit for int <-> str conversion (4300 digits), so a result can be written."""
MAX_STRING_LENGTH = 1_000_000
"""Characters in a string an expression builds (concatenation, replace())."""
MAX_RESULT_NODES = 1_000_000
"""Values in a result, nested ones included: lists sharing items can describe far bigger
documents than they take in memory (`{a: [1, 1], b: [a, a], c: [b, b], ...}`)."""


class ResultTooLargeError(ValueError):
    """A result would expand into more than MAX_RESULT_NODES JSON values."""


def from_json(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        number = Decimal(str(value))
        return number if number.is_finite() else None
    if isinstance(value, Mapping):
        return {str(k): from_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [from_json(v) for v in value]
    return value


def to_json(value: Any) -> Any:
    """The JSON value of a FEEL value; ResultTooLargeError past MAX_RESULT_NODES values."""
    budget = [MAX_RESULT_NODES]
    return _to_json(value, budget)


def _to_json(value: Any, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise ResultTooLargeError(f"the result has more than {MAX_RESULT_NODES} values")
    if isinstance(value, Decimal):
        return number_to_json(value)
    if isinstance(value, dict):
        return {k: _to_json(v, budget) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_json(v, budget) for v in value]
    if is_temporal(value):
        return temporal_text(value)
    return value


def number_to_json(value: Decimal) -> int | float | None:
    """int when integral, float otherwise; None when JSON cannot hold it."""
    if not value.is_finite():
        return None
    if value == value.to_integral_value():
        return int(value) if value.adjusted() < MAX_INTEGER_DIGITS else None
    result = float(value)
    return result if math.isfinite(result) else None


def is_number(value: Any) -> bool:
    return isinstance(value, Decimal)


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, Decimal):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "context"
    return temporal_type(value) or type(value).__name__
