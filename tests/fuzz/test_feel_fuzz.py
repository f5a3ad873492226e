"""Fuzzing FEEL: random text and random well-formed expression trees, evaluated against random
variables, give a JSON value or a typed FeelError, never another exception and never a hang.

Run longer with `HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest tests/fuzz/test_feel_fuzz.py`.
"""

from __future__ import annotations

import json
import math
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from partita.feel import FeelError, compile_expression
from partita.feel.builtins import FUNCTIONS
from partita.feel.lexer import KEYWORDS, MULTI_WORD
from tests.support.fuzz_profiles import fuzz_settings

SECONDS = 5.0
"""No expression may take longer than this to compile and evaluate. The worst hostile case
takes about 0.5 s alone; the margin is for a loaded CI machine (the bugs were hangs)."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Fail instead of hanging: SIGALRM interrupts pure-Python loops."""

    def expire(*_: object) -> None:
        raise TimeoutError(f"took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def assert_value_or_feel_error(text: str, variables: dict[str, Any]) -> None:
    """The property: a JSON value (strict JSON, as other clients read it back) or a FeelError
    with a reason, within SECONDS."""
    started = time.monotonic()
    try:
        with time_limit(SECONDS * 2):
            result = compile_expression("=" + text).evaluate(variables)
            json.dumps(result, allow_nan=False)
    except FeelError as error:
        assert error.reason, "a FEEL error must say what is wrong"
    assert time.monotonic() - started < SECONDS, f"slow: {text[:200]!r}"


# -- variables ------------------------------------------------------------------------------

NAMES = ["a", "b", "x", "items", "order", "amount", "name", "flag", "n"]
JSON_NUMBERS = st.integers(-(10**20), 10**20) | st.floats(allow_nan=True, allow_infinity=True)
JSON_LEAVES = st.none() | st.booleans() | JSON_NUMBERS | st.text(max_size=10)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(NAMES) | st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=15,
)
VARIABLES = st.dictionaries(st.sampled_from(NAMES), JSON_VALUES, max_size=6)
"""What a process instance may hold: JSON as Python's json module reads it (NaN and Infinity
included, since `json.loads` accepts them)."""

# -- expressions ----------------------------------------------------------------------------

NUMBERS = st.one_of(
    st.integers(0, 10**6).map(str),
    st.integers(0, 10**40).map(str),
    st.decimals(min_value=0, max_value=10**6, allow_nan=False, places=3).map(str),
    st.sampled_from(["0", "0.0", ".5", "1.", "99999999999999999999999999999999999"]),
)
STRINGS = st.text(max_size=8).map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"')
ATOMS = st.one_of(
    NUMBERS,
    STRINGS,
    st.sampled_from(["true", "false", "null", *NAMES, "item", "partial"]),
)
FUNCTION_NAMES = sorted([*FUNCTIONS, "is defined"])


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    two = st.tuples(inner, inner)
    return st.one_of(
        st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "**"]), inner).map(" ".join),
        st.tuples(inner, st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), inner).map(" ".join),
        st.tuples(inner, st.sampled_from(["and", "or"]), inner).map(" ".join),
        st.tuples(inner, inner, inner).map(lambda t: f"if {t[0]} then {t[1]} else {t[2]}"),
        st.tuples(inner, inner, inner).map(lambda t: f"{t[0]} between {t[1]} and {t[2]}"),
        two.map(lambda t: f"{t[0]} in {t[1]}"),
        st.lists(inner, max_size=4).map(lambda items: "[" + ", ".join(items) + "]"),
        st.lists(st.tuples(st.sampled_from([*NAMES, '"k y"']), inner), max_size=3).map(
            lambda entries: "{" + ", ".join(f"{k}: {v}" for k, v in entries) + "}"
        ),
        st.tuples(st.sampled_from(FUNCTION_NAMES), st.lists(inner, max_size=3)).map(
            lambda t: f"{t[0]}({', '.join(t[1])})"
        ),
        st.tuples(inner, st.sampled_from([*NAMES, "item"])).map(lambda t: f"({t[0]}).{t[1]}"),
        two.map(lambda t: f"({t[0]})[{t[1]}]"),
        st.tuples(inner, inner, inner).map(lambda t: f"for x in {t[0]}..{t[1]} return {t[2]}"),
        two.map(lambda t: f"for x in {t[0]} return {t[1]}"),
        st.tuples(st.sampled_from(["some", "every"]), inner, inner).map(
            lambda t: f"{t[0]} x in {t[1]} satisfies {t[2]}"
        ),
        inner.map(lambda e: f"-{e}"),
        st.tuples(inner, st.integers(1, 60)).map(lambda t: "(" * t[1] + t[0] + ")" * t[1]),
    )


EXPRESSIONS = st.recursive(ATOMS, _extend, max_leaves=12)

TOKENS = st.sampled_from(
    [
        *KEYWORDS,
        *MULTI_WORD,
        *FUNCTIONS,
        *NAMES,
        *'+-*/=<>()[]{},.:`"\\',
        "**",
        "..",
        "!=",
        "<=",
        " ",
        "1",
        "2.5",
        "²",
        "٣",
        "\u00a0",
    ]
)


@fuzz_settings()
@given(text=st.text(max_size=60), variables=VARIABLES)
@example(text="²", variables={})  # a Unicode digit the lexer took for a number
@example(text="1²", variables={})
def test_random_text_gives_a_value_or_a_feel_error(text: str, variables: dict[str, Any]) -> None:
    assert_value_or_feel_error(text, variables)


@fuzz_settings()
@given(tokens=st.lists(TOKENS, max_size=30), variables=VARIABLES)
def test_random_token_soup_gives_a_value_or_a_feel_error(
    tokens: list[str], variables: dict[str, Any]
) -> None:
    assert_value_or_feel_error(" ".join(tokens), variables)


@fuzz_settings(max_examples=300)
@given(text=EXPRESSIONS, variables=VARIABLES)
@example(text="10 ** 999999 * 10", variables={})  # decimal.Overflow escaped
@example(text="9 ** 9 ** 9", variables={})
@example(text="0 ** -1", variables={})  # Infinity could not become JSON
@example(text="string(10 ** 5000)", variables={})  # int too long for str()
@example(text="x < 1", variables={"x": math.nan})  # comparing NaN raised InvalidOperation
@example(text="x + 1", variables={"x": math.inf})
@example(text='number("NaN") < 1', variables={})
@example(text="for x in 1..100000000 return x", variables={})  # a hang
@example(text="for a in 1..3000, b in 1..3000 return a", variables={})
@example(text="floor(10 ** 999999)", variables={})
@example(text="[1][10 ** 999999]", variables={})
@example(text='substring("abc", 10 ** 999999)', variables={})
def test_well_formed_expressions_give_a_value_or_a_feel_error(
    text: str, variables: dict[str, Any]
) -> None:
    assert_value_or_feel_error(text, variables)


def _doubling(levels: int, leaf: str, combine: str) -> str:
    entries = [f"v0: {leaf}"] + [f"v{i}: {combine.format(p=f'v{i - 1}')}" for i in range(1, levels)]
    return "{" + ", ".join(entries) + f"}}.v{levels - 1}"


DEEP = 30_000
"""Far past any recursion limit, yet small enough that merely reading the text is quick."""
HOSTILE = {
    "deep-parentheses": "(" * DEEP + "1" + ")" * DEEP,
    "deep-negation": "-" * DEEP + "1",
    "long-sum": "+".join(["1"] * DEEP),
    "long-power": "**".join(["1"] * DEEP),
    "long-path": "a" + ".b" * DEEP,
    "long-filter": "a" + "[1]" * DEEP,
    "deep-lists": "[" * DEEP + "]" * DEEP,
    "deep-contexts": "{a: " * (DEEP // 2) + "1" + "}" * (DEEP // 2),
    "deep-ifs": "if true then " * (DEEP // 2) + "1" + " else 2" * (DEEP // 2),
    "long-and": " and ".join(["true"] * DEEP),
    "huge-number": "9" * 1_000_000,
    "huge-string": '"' + "x" * 1_000_000 + '"',
    "string-doubling": _doubling(64, '"xx"', "{p} + {p}"),
    "list-doubling": _doubling(64, "[1, 1]", "[{p}, {p}]"),
    "nested-loops": "for a in 1..1000, b in 1..1000, c in 1..1000 return 1",
    "loop-over-huge-range": "count(for x in 1..1000000000 return x)",
    "partial-copies": "count(for x in 1..90000 return 1)",
    "huge-power": "2 ** 2 ** 2 ** 2 ** 2 ** 2",
    "huge-substring": 'substring("abc", 1, 10 ** 999999)',
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_expressions_are_refused_or_evaluated_quickly(text: str) -> None:
    assert_value_or_feel_error(text, {"a": {"b": [1]}})
