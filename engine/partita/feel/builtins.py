"""The built-in functions of tiers 1 and 2. Wrong argument types give null, as FEEL does;
a wrong number of arguments is an evaluation error. The regular-expression functions live in
`regex` (linear time, bounded work)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from partita.feel import regex
from partita.feel.values import is_number, number_to_json, to_json


def _string(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        number = number_to_json(value)
        return None if number is None else str(number)
    if isinstance(value, str):
        return value
    import json

    return json.dumps(to_json(value), separators=(",", ":"))


def _number(value: Any) -> Decimal | None:
    if is_number(value):
        return value  # type: ignore[no-any-return]
    if isinstance(value, str):
        try:
            number = Decimal(value.strip())
        except InvalidOperation:
            return None
        return number if number.is_finite() else None  # "NaN", "Infinity" are no numbers
    return None


def _numbers(values: Any) -> list[Decimal] | None:
    items = values if isinstance(values, list) else None
    if items is None or not all(is_number(v) for v in items):
        return None
    return items


def _count(values: Any) -> Decimal | None:
    return Decimal(len(values)) if isinstance(values, list) else None


def _sum(values: Any) -> Decimal | None:
    items = _numbers(values)
    return None if items is None else sum(items, Decimal(0))


def _min(values: Any) -> Any:
    items = _numbers(values)
    return min(items) if items else None


def _max(values: Any) -> Any:
    items = _numbers(values)
    return max(items) if items else None


def _append(values: Any, *items: Any) -> list[Any] | None:
    return [*values, *items] if isinstance(values, list) else None


def _contains(text: Any, part: Any) -> bool | None:
    return part in text if isinstance(text, str) and isinstance(part, str) else None


def _starts_with(text: Any, part: Any) -> bool | None:
    return text.startswith(part) if isinstance(text, str) and isinstance(part, str) else None


def _ends_with(text: Any, part: Any) -> bool | None:
    return text.endswith(part) if isinstance(text, str) and isinstance(part, str) else None


def _upper(text: Any) -> str | None:
    return text.upper() if isinstance(text, str) else None


def _lower(text: Any) -> str | None:
    return text.lower() if isinstance(text, str) else None


def _length(text: Any) -> Decimal | None:
    return Decimal(len(text)) if isinstance(text, str) else None


def _substring(text: Any, start: Any, length: Any = None) -> str | None:
    if not isinstance(text, str) or not is_number(start):
        return None
    if length is not None and not is_number(length):
        return None
    limit = len(text) + 1  # clamp before int(): 1E+999999 has a million digits
    index = int(max(min(start, limit), -limit))
    begin = index - 1 if index > 0 else len(text) + index
    if length is None:
        return text[max(begin, 0) :]
    return text[max(begin, 0) : max(begin, 0) + int(max(min(length, limit), -limit))]


def _get_value(context: Any, key: Any) -> Any:
    return context.get(key) if isinstance(context, dict) and isinstance(key, str) else None


def _context_put(context: Any, key: Any, value: Any) -> dict[str, Any] | None:
    if not isinstance(context, dict) or not isinstance(key, str):
        return None
    return {**context, key: value}


def _not(value: Any) -> bool | None:
    return (not value) if isinstance(value, bool) else None


def _list_contains(values: Any, item: Any) -> bool | None:
    return item in values if isinstance(values, list) else None


def _abs(value: Any) -> Decimal | None:
    return abs(value) if is_number(value) else None


def _floor(value: Any) -> Decimal | None:
    return value.to_integral_value(rounding="ROUND_FLOOR") if is_number(value) else None


def _ceiling(value: Any) -> Decimal | None:
    return value.to_integral_value(rounding="ROUND_CEILING") if is_number(value) else None


FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int]] = {
    # name: (function, minimum arguments, maximum arguments; -1 = any)
    "string": (_string, 1, 1),
    "number": (_number, 1, 1),
    "not": (_not, 1, 1),
    "count": (_count, 1, 1),
    "sum": (_sum, 1, -1),
    "min": (_min, 1, -1),
    "max": (_max, 1, -1),
    "append": (_append, 1, -1),
    "contains": (_contains, 2, 2),
    "starts with": (_starts_with, 2, 2),
    "ends with": (_ends_with, 2, 2),
    "upper case": (_upper, 1, 1),
    "lower case": (_lower, 1, 1),
    "string length": (_length, 1, 1),
    "substring": (_substring, 2, 3),
    "matches": (regex.matches, 2, 3),
    "replace": (regex.replace, 3, 4),
    "split": (regex.split, 2, 2),
    "get value": (_get_value, 2, 2),
    "context put": (_context_put, 3, 3),
    "list contains": (_list_contains, 2, 2),
    "abs": (_abs, 1, 1),
    "floor": (_floor, 1, 1),
    "ceiling": (_ceiling, 1, 1),
}

METERED = frozenset({"matches", "replace", "split"})
"""Functions whose work grows with their arguments beyond one step: they take the evaluation's
step meter (`regex.Meter`) before their arguments and charge it as they go."""
