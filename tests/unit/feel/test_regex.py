"""FEEL's matches(), replace() and split(): XPath flags and replacement syntax, and bounded work
(catastrophic patterns answer at once; what cannot be bounded is an error naming the limit)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from partita.feel import FeelEvaluationError, evaluate
from partita.feel.evaluator import MAX_STEPS, MAX_STRING_LENGTH
from partita.feel.regex import MAX_WORK

CASES: list[tuple[str, dict[str, Any], Any]] = [
    ('=matches("order-42", "^order-[0-9]+$")', {}, True),
    ('=matches("order-4x", "^order-[0-9]+$")', {}, False),
    ('=matches("Order", "order")', {}, False),
    ('=matches("Order", "order", "i")', {}, True),
    ('=matches("a\\nb", "a.b")', {}, False),
    ('=matches("a\\nb", "a.b", "s")', {}, True),
    ('=matches("x\\nend", "^end$")', {}, False),
    ('=matches("x\\nend", "^end$", "m")', {}, True),
    ('=matches("abc", "a b c", "x")', {}, True),
    ('=matches("a c", "a[ ]c", "x")', {}, True),  # whitespace inside a class stays
    ('=matches("a.c", "a.c", "q")', {}, True),
    ('=matches("abc", "a.c", "q")', {}, False),
    ('=matches("A.C", "a.c", "qi")', {}, True),
    ('=matches("ab", "b\\\\Z")', {}, True),  # Python's \Z: end of text
    ('=matches("a", "(")', {}, None),  # no regular expression: a wrong argument
    ("=matches(1, 2)", {}, None),
    ('=matches("a", "a", 1)', {}, None),
    ('=replace("abcd", "(b)(c)", "[$2$1]")', {}, "a[cb]d"),
    ('=replace("abc", "b", "\\\\$")', {}, "a$c"),
    ('=replace("abc", "b", "\\\\\\\\")', {}, "a\\c"),
    ('=replace("abc", "(b)", "$12")', {}, "ab2c"),  # no group 12: $1 then "2"
    ('=replace("abc", "b", "$1")', {}, "ac"),  # no such group: the empty string
    ('=replace("aBc", "b", "x", "i")', {}, "axc"),
    ('=replace("abxd", "x*", "-")', {}, "-a-b--d-"),  # empty matches, as Java's replaceAll
    (
        "=replace(text, pattern, replacement)",
        {"text": "a1b22", "pattern": "[0-9]+", "replacement": "#"},
        "a#b#",
    ),
    ('=split("a;b;c;;", ";")', {}, ["a", "b", "c", "", ""]),
    ('=split("John Doe", "\\\\s")', {}, ["John", "Doe"]),
    ('=split("a1b22c", "([0-9])+")', {}, ["a", "b", "c"]),  # groups are not parts
    ('=split("abc", "")', {}, ["a", "b", "c", ""]),  # as Java's split(regex, -1)
    ('=split("", ",")', {}, [""]),
    ('=split(1, ",")', {}, None),
]


@pytest.mark.parametrize(("expression", "variables", "expected"), CASES)
def test_results(expression: str, variables: dict[str, Any], expected: Any) -> None:
    assert evaluate(expression, variables) == expected


def _error(expression: str, variables: dict[str, Any] | None = None) -> str:
    with pytest.raises(FeelEvaluationError) as caught:
        evaluate(expression, variables)
    return caught.value.reason


CATASTROPHIC = [
    ("a" * 36 + "!", "(a+)+$"),
    ("a" * 100_000 + "!", "(a+)+$"),
    ("a" * 50_000, "(a|a)*b"),
    ("x" * 30_000 + "y", "(x+x+)+z"),
]


@pytest.mark.parametrize(("text", "pattern"), CATASTROPHIC)
def test_a_catastrophic_pattern_answers_at_once(text: str, pattern: str) -> None:
    started = time.monotonic()
    assert evaluate("=matches(text, pattern)", {"text": text, "pattern": pattern}) is False
    assert evaluate('=replace(text, pattern, "-")', {"text": text, "pattern": pattern}) == text
    assert evaluate("=split(text, pattern)", {"text": text, "pattern": pattern}) == [text]
    assert time.monotonic() - started < 5  # Python's re takes hours on the first one


def test_work_past_the_bound_is_an_error_naming_the_function_and_the_limit() -> None:
    # 1006 instructions over 100k bytes: RE2's DFA runs out of memory on it, and the automaton
    # simulated instead would take about 0.5 s for each 10**8 units
    variables = {"text": "ab" * 50_000, "pattern": "a[ab]{1000}c"}
    started = time.monotonic()
    reason = _error("=matches(text, pattern)", variables)
    assert reason.startswith("matches(): matching a pattern of ")
    assert f"over the limit of {MAX_WORK}" in reason
    assert time.monotonic() - started < 5


def test_repeated_calls_run_into_the_step_limit() -> None:
    # each call is within MAX_WORK, but a loop of them is charged to the evaluation
    variables = {"text": "ab" * 20_000, "pattern": "a[ab]{400}c"}
    started = time.monotonic()
    reason = _error("=for i in 1..1000 return matches(text, pattern)", variables)
    assert reason == f"the evaluation takes more than {MAX_STEPS} steps"
    assert time.monotonic() - started < 10


def test_many_matches_are_charged_to_the_step_limit() -> None:
    text = "a" * 200_000
    reason = _error('=for i in 1..2 return split(text, "")', {"text": text})
    assert reason == f"the evaluation takes more than {MAX_STEPS} steps"


@pytest.mark.parametrize(
    ("pattern", "what"),
    [
        ("(a)\\1", "invalid escape sequence: \\1"),  # a back-reference
        ("a(?=b)", "invalid perl operator: (?="),  # look-ahead
        ("a{1001}", "invalid repetition size: {1001}"),
    ],
)
def test_a_pattern_that_needs_backtracking_is_an_error_not_a_null(pattern: str, what: str) -> None:
    reason = _error('=matches("aa", pattern)', {"pattern": pattern})
    assert reason.startswith(f"matches(): the pattern {pattern!r} is not supported: {what}")
    assert "no back-references, no look-around" in reason


def test_a_pattern_too_large_to_compile_names_the_limit() -> None:
    pattern = "".join(f"[^{letter}]{{1000}}" for letter in "abcdefghijklmnopqrstuvwxyz")
    reason = _error('=matches("a", pattern)', {"pattern": pattern})
    assert "is not supported: pattern too large" in reason
    assert "the limit is 2048 KiB of compiled program" in reason


def test_unknown_flags_and_bad_replacements_are_errors() -> None:
    assert _error('=matches("a", "a", "g")', {}).startswith("matches(): unknown flag 'g'")
    assert _error('=replace("a", "a", "x", "z")', {}).startswith("replace(): unknown flag 'z'")
    reason = _error('=replace("a", "a", "$x")', {})
    assert reason.startswith("replace(): the replacement '$x' has a '$' not before a group number")
    reason = _error('=replace("a", "a", "\\\\n")', {})
    assert "has a '\\' not before '\\' or '$' at position 1" in reason


def test_a_replacement_result_past_the_string_limit_is_an_error() -> None:
    text = "a" * 2_000
    reason = _error('=replace(text, "a", replacement)', {"text": text, "replacement": "b" * 1_000})
    assert reason == f"replace(): the result would be longer than {MAX_STRING_LENGTH} characters"


def test_lone_surrogates_are_an_error() -> None:
    reason = _error('=matches(text, "a")', {"text": "a\ud800"})
    assert reason == "matches(): the text holds a lone surrogate at position 2"
