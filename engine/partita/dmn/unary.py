"""FEEL unary tests: the input entries of decision table rules.

An entry is `-` or empty (anything), or comma-separated tests, any of which may match: a
comparison (`< 10`, `>= limit`), an interval (`[1..5]`, `]0..1[`, `(a..b]`), `not(tests)`, or
an expression. An expression that uses `?` (the input) must yield a boolean; otherwise the
input matches when it equals the value, or is in it when the value is a list. Endpoints and
expressions are FEEL, compiled once (`compile_tests`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from partita.feel import FeelError, compile_expression

INPUT = "cellInput"
"""The name `?` is rewritten to: the input value, bound while the tests run."""

Test = Callable[[Any, dict[str, Any]], bool | None]


class UnaryTestError(ValueError):
    pass


@lru_cache(maxsize=4096)
def compile_tests(text: str) -> Test:
    """The compiled entry; UnaryTestError naming the entry and what does not parse."""
    try:
        return _compile(text)
    except FeelError as error:
        raise UnaryTestError(f"'{text.strip()}': {error.reason}") from None


def _compile(text: str) -> Test:
    stripped = text.strip()
    if stripped in ("", "-"):
        return lambda value, variables: True
    if stripped.startswith("not(") and stripped.endswith(")") and _closes_at_end(stripped[3:]):
        inner = _compile(stripped[4:-1])

        def negated(value: Any, variables: dict[str, Any]) -> bool | None:
            result = inner(value, variables)
            return None if result is None else not result

        return negated
    tests = [_one(part.strip()) for part in _split(stripped)]
    if len(tests) == 1:
        return tests[0]

    def any_of(value: Any, variables: dict[str, Any]) -> bool | None:
        return any(test(value, variables) for test in tests)

    return any_of


def _closes_at_end(text: str) -> bool:
    """True when the parenthesis opening `text` is closed by its last character."""
    depth = 0
    for i, char in enumerate(_outside_strings(text)):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return i == len(text) - 1
    return False


def _outside_strings(text: str) -> str:
    """`text` with the characters inside string literals replaced by spaces."""
    out, quoted, escaped = [], False, False
    for char in text:
        if quoted:
            out.append(" " if char != '"' or escaped else '"')
            if char == '"' and not escaped:
                quoted = False
            escaped = char == "\\" and not escaped
        else:
            out.append(char)
            quoted = char == '"'
    return "".join(out)


def _split(text: str) -> list[str]:
    """Split on the commas outside brackets, parentheses and strings."""
    masked = _outside_strings(text)
    parts, depth, start = [], 0, 0
    for i, char in enumerate(masked):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _compiled(text: str) -> Callable[[dict[str, Any]], Any]:
    masked = _outside_strings(text)
    body = "".join(f" {INPUT} " if masked[i] == "?" else text[i] for i in range(len(text)))
    return compile_expression("=" + body).evaluate


_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "<=": lambda a, b: a <= b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    ">": lambda a, b: a > b,
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


def _one(text: str) -> Test:
    for operator, compare in _COMPARISONS.items():
        if text.startswith(operator) and not text.startswith(operator + "="):
            endpoint = _compiled(text[len(operator) :])
            return lambda value, variables: _compare(compare, value, endpoint(variables))
    if text[:1] in "[](" and text[-1:] in "[])" and ".." in _outside_strings(text):
        return _interval(text)
    expression = _compiled(text)
    uses_input = "?" in _outside_strings(text)

    def test(value: Any, variables: dict[str, Any]) -> bool | None:
        result = expression({**variables, INPUT: value})
        if uses_input or (isinstance(result, bool) and not isinstance(value, bool)):
            return result if isinstance(result, bool) or result is None else False
        if isinstance(result, list):
            return value in result
        return _equal(value, result)

    return test


def _interval(text: str) -> Test:
    masked = _outside_strings(text)
    middle = masked.index("..")
    low, high = _compiled(text[1:middle]), _compiled(text[middle + 2 : -1])
    low_open, high_open = text[0] in "](", text[-1] in "[)"

    def test(value: Any, variables: dict[str, Any]) -> bool | None:
        above = _compare(_COMPARISONS[">" if low_open else ">="], value, low(variables))
        below = _compare(_COMPARISONS["<" if high_open else "<="], value, high(variables))
        return None if above is None or below is None else above and below

    return test


def _compare(compare: Callable[[Any, Any], bool], value: Any, other: Any) -> bool | None:
    if compare is _COMPARISONS["="]:
        return _equal(value, other)
    if compare is _COMPARISONS["!="]:
        return not _equal(value, other)
    if value is None or other is None:
        return None
    numbers = (int, float)
    if isinstance(value, numbers) and isinstance(other, numbers) and not isinstance(value, bool):
        return compare(value, other)
    if type(value) is type(other):
        try:
            return compare(value, other)
        except TypeError:
            return None
    return None


def _equal(value: Any, other: Any) -> bool:
    if isinstance(value, bool) or isinstance(other, bool):
        return value is other
    return bool(value == other)
