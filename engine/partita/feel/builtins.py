"""The built-in functions of tiers 1 and 2. Wrong argument types give null, as FEEL does;
a wrong number of arguments is an evaluation error. The regular-expression functions live in
`regex` (linear time, bounded work)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from partita.feel import regex, temporal, temporal_functions
from partita.feel.errors import FeelBuiltinError
from partita.feel.values import MAX_STRING_LENGTH, is_number, number_to_json, to_json


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
    if temporal.is_temporal(value):
        return temporal.to_text(value, zone_ids=True)
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


def _abs(value: Any) -> Any:
    if isinstance(value, temporal.YearsMonths):
        return temporal.YearsMonths(abs(value.months))
    if isinstance(value, timedelta):
        return abs(value)
    return abs(value) if is_number(value) else None


def _list(values: Any) -> list[Any] | None:
    return values if isinstance(values, list) else None


def _string_join(values: Any, delimiter: Any = "") -> str | None:
    items = _list(values)
    if items is None or not isinstance(delimiter, str | None):
        return None
    if not all(isinstance(v, str) or v is None for v in items):
        return None
    text = (delimiter or "").join(v for v in items if v is not None)
    if len(text) > MAX_STRING_LENGTH:
        raise FeelBuiltinError(f"a string longer than {MAX_STRING_LENGTH} characters")
    return text


def _index_of(values: Any, item: Any) -> list[Decimal] | None:
    items = _list(values)
    if items is None:
        return None
    return [Decimal(i + 1) for i, v in enumerate(items) if _same(v, item)]


def _same(left: Any, right: Any) -> bool:
    return type(left) is type(right) and bool(left == right)


def _distinct_values(values: Any) -> list[Any] | None:
    items = _list(values)
    if items is None:
        return None
    seen: set[Any] = set()
    kept: list[Any] = []
    for item in items:  # linear: contexts and lists are told apart by their JSON text
        key = _identity(item)
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept


def _identity(value: Any) -> Any:
    if isinstance(value, dict | list):
        import json

        return ("json", json.dumps(to_json(value), sort_keys=True))
    return (type(value), value)


def _reverse(values: Any) -> list[Any] | None:
    items = _list(values)
    return None if items is None else items[::-1]


def _flatten(values: Any) -> list[Any] | None:
    if not isinstance(values, list):
        return None
    out: list[Any] = []
    stack = [iter(values)]
    while stack:  # iterative: a deeply nested list cannot exhaust the stack
        item = next(stack[-1], _END)
        if item is _END:
            stack.pop()
        elif isinstance(item, list):
            stack.append(iter(item))
        else:
            out.append(item)
    return out


_END = object()


def _sublist(values: Any, start: Any, length: Any = None) -> list[Any] | None:
    items = _list(values)
    if items is None or not is_number(start) or (length is not None and not is_number(length)):
        return None
    limit = len(items) + 1
    index = int(max(min(start, limit), -limit))
    begin = index - 1 if index > 0 else len(items) + index
    if begin < 0 or index == 0:
        return None
    if length is None:
        return items[begin:]
    return items[begin : begin + int(max(min(length, limit), 0))]


def _concatenate(*lists: Any) -> list[Any] | None:
    if not all(isinstance(v, list) for v in lists):
        return None
    return [item for values in lists for item in values]


def _mean(values: Any) -> Decimal | None:
    items = _numbers(values)
    return sum(items, Decimal(0)) / len(items) if items else None


def _product(values: Any) -> Decimal | None:
    items = _numbers(values)
    if not items:
        return None
    result = Decimal(1)
    for item in items:
        result *= item
    return result if result.is_finite() else None


def _all(values: Any) -> bool | None:
    items = _list(values)
    if items is None or not all(isinstance(v, bool) for v in items):
        return None
    return all(items)


def _any(values: Any) -> bool | None:
    items = _list(values)
    if items is None or not all(isinstance(v, bool) for v in items):
        return None
    return any(items)


def _rounding(mode: str) -> Callable[[Any, Any], Decimal | None]:
    def rounded(value: Any, scale: Any = Decimal(0)) -> Decimal | None:
        if not is_number(value) or not is_number(scale) or abs(scale) > MAX_SCALE:
            return None
        return value.quantize(Decimal(1).scaleb(-int(scale)), rounding=mode)  # type: ignore[no-any-return]

    return rounded


MAX_SCALE = 1000
"""The largest scale `decimal()` and the rounding functions take."""


def _modulo(dividend: Any, divisor: Any) -> Decimal | None:
    if not is_number(dividend) or not is_number(divisor) or divisor == 0:
        return None
    return dividend - divisor * (dividend / divisor).to_integral_value(rounding="ROUND_FLOOR")  # type: ignore[no-any-return]


def _sqrt(value: Any) -> Decimal | None:
    return value.sqrt() if is_number(value) and value >= 0 else None


def _odd(value: Any) -> bool | None:
    if not is_number(value) or value != value.to_integral_value():
        return None
    return value % 2 != 0  # type: ignore[no-any-return]


def _even(value: Any) -> bool | None:
    odd = _odd(value)
    return None if odd is None else not odd


def _trim(text: Any) -> str | None:
    return text.strip() if isinstance(text, str) else None


def _substring_before(text: Any, part: Any) -> str | None:
    if not isinstance(text, str) or not isinstance(part, str):
        return None
    return text.split(part, 1)[0] if part in text else ""


def _substring_after(text: Any, part: Any) -> str | None:
    if not isinstance(text, str) or not isinstance(part, str):
        return None
    return text.split(part, 1)[1] if part in text else ""


def _is_empty(values: Any) -> bool | None:
    return len(values) == 0 if isinstance(values, list) else None


def _get_entries(context: Any) -> list[dict[str, Any]] | None:
    if not isinstance(context, dict):
        return None
    return [{"key": k, "value": v} for k, v in context.items()]


def _context_merge(*contexts: Any) -> dict[str, Any] | None:
    merged: dict[str, Any] = {}
    items = contexts[0] if len(contexts) == 1 and isinstance(contexts[0], list) else contexts
    for context in items:
        if not isinstance(context, dict):
            return None
        merged.update(context)
    return merged


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
    "string join": (_string_join, 1, 2),
    "index of": (_index_of, 2, 2),
    "distinct values": (_distinct_values, 1, 1),
    "reverse": (_reverse, 1, 1),
    "flatten": (_flatten, 1, 1),
    "sublist": (_sublist, 2, 3),
    "concatenate": (_concatenate, 0, -1),
    "mean": (_mean, 1, -1),
    "product": (_product, 1, -1),
    "all": (_all, 1, -1),
    "any": (_any, 1, -1),
    "decimal": (_rounding("ROUND_HALF_EVEN"), 2, 2),
    "round half up": (_rounding("ROUND_HALF_UP"), 1, 2),
    "round half down": (_rounding("ROUND_HALF_DOWN"), 1, 2),
    "round up": (_rounding("ROUND_UP"), 1, 2),
    "round down": (_rounding("ROUND_DOWN"), 1, 2),
    "modulo": (_modulo, 2, 2),
    "sqrt": (_sqrt, 1, 1),
    "odd": (_odd, 1, 1),
    "even": (_even, 1, 1),
    "trim": (_trim, 1, 1),
    "substring before": (_substring_before, 2, 2),
    "substring after": (_substring_after, 2, 2),
    "is empty": (_is_empty, 1, 1),
    "get entries": (_get_entries, 1, 1),
    "context merge": (_context_merge, 1, -1),
    **temporal_functions.FUNCTIONS,
}

METERED = frozenset({"matches", "replace", "split"})
"""Functions whose work grows with their arguments beyond one step: they take the evaluation's
step meter (`regex.Meter`) before their arguments and charge it as they go."""
