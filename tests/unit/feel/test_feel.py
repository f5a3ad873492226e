"""FEEL tiers 1 and 2: results, null semantics, type checks and errors with positions."""

from __future__ import annotations

from typing import Any

import pytest

from partita.feel import (
    FeelEvaluationError,
    FeelSyntaxError,
    compile_expression,
    evaluate,
)
from tests.support.feel_variables import VARIABLES

CASES: list[tuple[str, Any]] = [
    # tier 1: names, paths, literals, comparison, logic, arithmetic, strings, conversions
    ("=x", 7),
    ("=order.total", 99.5),
    ("=order.missing.deeper", None),
    ("=unknown", None),
    ("=1 + 2 * 3", 7),
    ("=(1 + 2) * 3", 9),
    ("=0.1 + 0.2", 0.3),
    ("=10 / 4", 2.5),
    ("=2 ** 10", 1024),
    ("=-x + 1", -6),
    ("=5 / 0", None),
    ('="a" + "b"', "ab"),
    ('="a" + 1', None),
    ("=x > 5 and x < 10", True),
    ("=x = 7", True),
    ("=x != 7", False),
    ('=name = "Ada"', True),
    ("=nothing = null", True),
    ("=unknown = null", True),
    ('=x = "7"', None),
    ("=x between 1 and 7", True),
    ("=true and null", None),
    ("=false and null", False),
    ("=true or null", True),
    ("=false or null", None),
    ("=not(false)", True),
    ("=not(1)", None),
    ("=is defined(x)", True),
    ("=is defined(nothing)", True),
    ("=is defined(unknown)", False),
    ("=is defined(order.total)", True),
    ("=is defined(order.nope)", False),
    ("=string(12.5)", "12.5"),
    ("=string(true)", "true"),
    ('=number("42")', 42),
    ('=number("x")', None),
    ('=if x > 5 then "big" else "small"', "big"),
    ("=if unknown then 1 else 2", 2),
    ("=[1, 2, 3]", [1, 2, 3]),
    ('={a: 1, "b c": 2}', {"a": 1, "b c": 2}),
    ("={a: 1, b: a + 1}.b", 2),
    # tier 2: indexing, filters, quantifiers, for, functions
    ("=[1, 2, 3][1]", 1),
    ("=[1, 2, 3][-1]", 3),
    ("=[1, 2, 3][4]", None),
    ("=[1, 2, 3, 4][item > 2]", [3, 4]),
    ("=order.items[qty > 3].sku", ["b"]),
    ("=order.items.sku", ["a", "b"]),
    ("=some i in order.items satisfies i.qty > 4", True),
    ("=every f in flags satisfies f", False),
    ("=for i in [1, 2, 3] return i * i", [1, 4, 9]),
    ("=for i in 1..3 return i", [1, 2, 3]),
    ("=for a in [1, 2], b in [10, 20] return a + b", [11, 21, 12, 22]),
    ("=count(order.items)", 2),
    ("=sum(for i in order.items return i.qty)", 7),
    ("=sum(1, 2, 3)", 6),
    ("=min([3, 1, 2])", 1),
    ("=max(3, 9)", 9),
    ("=append([1], 2, 3)", [1, 2, 3]),
    ('=contains("partita", "tit")', True),
    ('=starts with(name, "A")', True),
    ('=ends with(name, "a")', True),
    ("=upper case(name)", "ADA"),
    ("=lower case(name)", "ada"),
    ('=substring("foobar", 3)', "obar"),
    ('=substring("foobar", 3, 3)', "oba"),
    ('=substring("foobar", -2, 1)', "a"),
    ("=string length(name)", 3),
    ('=matches("order-42", "^order-[0-9]+$")', True),
    ('=get value(order, "total")', 99.5),
    ('=context put({a: 1}, "b", 2)', {"a": 1, "b": 2}),
    ("=list contains([1, 2], 2)", True),
    ("=2 in [1, 2]", True),
    ("static text", "static text"),
    ("42", "42"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_evaluation(text: str, expected: Any) -> None:
    assert evaluate(text, VARIABLES) == expected


@pytest.mark.parametrize(
    ("text", "message", "position"),
    [
        ("=1 +", "unexpected 'the end of the expression'", 3),
        ("=(1 + 2", "expected ')' but found 'the end'", 6),
        ('="unterminated', "unterminated string", 0),
        ("=x # 2", "unexpected character '#'", 2),
        ("=if x then 1", "expected 'else'", 11),
        ("=", "empty expression", 0),
        ("=1 2", "unexpected '2'", 2),
    ],
)
def test_syntax_errors_point_at_the_problem(text: str, message: str, position: int) -> None:
    with pytest.raises(FeelSyntaxError) as raised:
        compile_expression(text)
    assert message in raised.value.reason
    assert raised.value.position == position
    assert "^" in str(raised.value)


def test_evaluation_errors_name_the_function() -> None:
    with pytest.raises(FeelEvaluationError, match="unknown function 'frobnicate'"):
        evaluate("=frobnicate(1)")
    with pytest.raises(FeelEvaluationError, match=r"contains\(\) takes 2 arguments, got 1"):
        evaluate('=contains("a")')


def test_a_condition_must_be_boolean() -> None:
    expression = compile_expression("=order.total")
    assert expression.evaluate_as("number", VARIABLES) == 99.5
    with pytest.raises(
        FeelEvaluationError, match="expected the result to be a boolean but it is number"
    ):
        expression.evaluate_as("boolean", VARIABLES)
    with pytest.raises(FeelEvaluationError, match="but it is null"):
        compile_expression("=unknown > 1").evaluate_as("boolean", VARIABLES)


def test_static_values_and_caching() -> None:
    assert compile_expression("payment").is_static
    assert compile_expression("=x") is compile_expression("=x")
