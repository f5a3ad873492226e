"""DMN decisions parsed from a Modeler-style file and evaluated on the project's FEEL: unary
tests, hit policies, required decisions, literal expressions, the audit and the failures."""

from __future__ import annotations

import json

import pytest

from partita.dmn import DecisionFailure, DmnError, evaluate_decision, parse_dmn
from partita.dmn.unary import UnaryTestError, compile_tests
from tests.support.paths import ROOT

DINNER = parse_dmn((ROOT / "tests" / "fixtures" / "dmn" / "dish.dmn").read_bytes(), "dish.dmn")


@pytest.mark.parametrize(
    ("entry", "value", "matches"),
    [
        ("-", 5, True),
        ("", None, True),
        ("< 10", 5, True),
        ("< 10", 10, False),
        ("<= limit", 10, True),
        ("[1..5]", 5, True),
        ("[1..5[", 5, False),
        ("]1..5]", 1, False),
        ('"a", "b"', "b", True),
        ('"a", "b"', "c", False),
        ('not("a", "b")', "c", True),
        ("not(< 3)", 2, False),
        ("? > 2 and ? < 4", 3, True),
        ("[2, 3]", 3, True),
        ("true", True, True),
        ("false", True, False),
        ("< 10", None, None),
        ('"x,y"', "x,y", True),
    ],
)
def test_unary_tests(entry: str, value: object, matches: bool | None) -> None:
    assert compile_tests(entry)(value, {"limit": 10}) is matches


def test_a_unary_test_that_does_not_parse_names_itself() -> None:
    with pytest.raises(UnaryTestError, match=r"'< 10 \+': unexpected"):
        compile_tests("< 10 +")


def test_a_unique_table_reads_its_required_literal_decision() -> None:
    evaluation = evaluate_decision(DINNER, "dish", {"month": 12, "guests": 6})
    assert evaluation.output == "Roastbeef"
    season, dish = evaluation.decisions
    assert (season.decision_id, season.decision_type, season.output) == (
        "season",
        "LITERAL_EXPRESSION",
        '"Winter"',
    )
    assert dish.decision_type == "DECISION_TABLE"
    assert [(i.input_id, i.input_name, i.input_value) for i in dish.inputs] == [
        ("in-season", "Season", '"Winter"'),
        ("in-guests", "How many guests", "6"),
    ]
    (rule,) = dish.matched_rules
    assert (rule.rule_id, rule.rule_index) == ("r1", 1)
    assert [(o.output_name, o.output_value) for o in rule.outputs] == [("dish", '"Roastbeef"')]
    assert evaluate_decision(DINNER, "dish", {"month": 7, "guests": 3}).output == "Salad 3"
    assert evaluate_decision(DINNER, "dish", {"month": 7, "guests": 40}).output is None


def test_unique_with_two_matches_fails_naming_the_decision() -> None:
    with pytest.raises(DecisionFailure) as failure:
        evaluate_decision(DINNER, "dish", {"month": 7, "guests": 4})  # r3 and r4 match
    assert failure.value.decision_id == "dish"
    assert failure.value.reason == (
        "Expected to evaluate decision 'dish', but multiple values aren't allowed for UNIQUE"
        """ hit policy. found: '"Salad 4", "Barbecue"'"""
    )
    assert [d.decision_id for d in failure.value.decisions] == ["season"]


def test_collect_priority_and_sum() -> None:
    drinks = evaluate_decision(DINNER, "drinks", {"dish": "Stew", "kids": False})
    assert drinks.output == ["Water", "Red wine"]
    assert [r.rule_index for r in drinks.decisions[0].matched_rules] == [1, 2]
    discount = evaluate_decision(DINNER, "discount", {"total": 600})
    assert discount.output == {"level": "gold", "rate": 0.1}
    assert len(discount.decisions[0].matched_rules) == 3
    assert evaluate_decision(DINNER, "points", {"items": 7}).output == 24
    assert evaluate_decision(DINNER, "points", {"items": 0}).output is None  # no match: null


def test_failures_name_the_decision_and_why() -> None:
    assert DINNER.decisions["dish"].required == ("season",)
    failing = (ROOT / "tests" / "fixtures" / "dmn" / "dish.dmn").read_text()
    failing = failing.replace("<text>if month", "<text>if frobnicate(month) then 1 else if month")
    with pytest.raises(DecisionFailure) as failure:
        evaluate_decision(parse_dmn(failing.encode()), "dish", {"month": 1, "guests": 2})
    assert failure.value.decision_id == "season"  # the required decision that failed
    assert failure.value.reason.startswith(
        "Expected to evaluate decision 'dish', but failed to evaluate expression"
    )
    assert "unknown function 'frobnicate'" in failure.value.reason
    with pytest.raises(DecisionFailure, match="no decision found for 'nope'"):
        evaluate_decision(DINNER, "nope", {})


def test_invalid_models_report_every_problem() -> None:
    bad = (ROOT / "tests" / "fixtures" / "dmn" / "dish.dmn").read_text()
    bad = bad.replace('hitPolicy="PRIORITY"', 'hitPolicy="SOMETIMES"')
    bad = bad.replace("<text>items * 2</text>", "<text>items * </text>")
    bad = bad.replace('href="#season"', 'href="#weather"')
    with pytest.raises(DmnError) as error:
        parse_dmn(bad.encode(), "bad.dmn")
    text = str(error.value)
    assert text.startswith("'bad.dmn' is not a valid DMN model: ")
    assert "discount: unknown hit policy 'SOMETIMES'" in text
    assert "points: rule s2: FEEL expression 'items *'" in text
    assert "dish: requires 'weather', which is not a decision" in text
    with pytest.raises(DmnError, match="DOCTYPE"):
        parse_dmn(b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><x/>', "bomb.dmn")
    cyclic = bad.replace('href="#weather"', 'href="#dish"').replace("SOMETIMES", "PRIORITY")
    cyclic = cyclic.replace("<text>items * </text>", "<text>items</text>")
    with pytest.raises(DmnError, match="Cyclic dependencies"):
        parse_dmn(cyclic.encode(), "cyclic.dmn")
    assert json.dumps(DINNER.decisions["season"].result_name) == '"season"'
