"""FEEL's dates, times, durations and the functions beside them (the ones Camunda processes use:
`now()`, `date and time()`, `duration()`, `string join()`, rounding, ...): their results as the
JSON a variable holds, their arithmetic and properties, null where FEEL has no result, and an
engine clock that makes `now()` the same on every evaluation of one command."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from partita.feel import FeelEvaluationError, FeelSyntaxError, evaluate
from partita.feel.temporal_functions import FixedClock, use_clock

MOMENT_MS = 1_796_638_800_000
"""2026-12-07T10:20:00Z, the engine clock these tests set."""

CASES: list[tuple[str, Any]] = [
    # building values, and the ISO text they become in JSON
    ('=date("2026-12-07")', "2026-12-07"),
    ("=date(2026, 12, 7)", "2026-12-07"),
    ('=date(date and time("2026-12-07T23:59:00Z"))', "2026-12-07"),
    ('=time("10:30:00")', "10:30:00"),
    ('=time("10:30:00.250+02:00")', "10:30:00.25+02:00"),
    ("=time(10, 30, 0)", "10:30:00"),
    ('=time(10, 30, 0, duration("PT1H"))', "10:30:00+01:00"),
    ('=date and time("2026-12-07T10:30:00")', "2026-12-07T10:30:00"),
    ('=date and time("2026-12-07T10:30:00Z")', "2026-12-07T10:30:00Z"),
    ('=date and time("2026-07-07T10:30:00@Europe/Berlin")', "2026-07-07T10:30:00+02:00"),
    ('=date and time(date("2026-12-07"), time("08:00:00Z"))', "2026-12-07T08:00:00Z"),
    ('=duration("P2DT3H4M5S")', "P2DT3H4M5S"),
    ('=duration("PT90M")', "PT1H30M"),
    ('=duration("P14M")', "P1Y2M"),
    ('=duration("-PT1H")', "-PT1H"),
    ('=years and months duration(date("2020-01-15"), date("2026-12-07"))', "P6Y10M"),
    ('=@"2026-12-07"', "2026-12-07"),
    ('=@"P1D"', "P1D"),
    ('=@"2026-12-07T10:30:00Z"', "2026-12-07T10:30:00Z"),
    # strings are strings until a function makes them dates
    (
        '=string(date and time("2026-12-07T10:30:00@Europe/Berlin"))',
        "2026-12-07T10:30:00@Europe/Berlin",
    ),
    ('=string(@"P1Y")', "P1Y"),
    ('="2026-12-07" < date("2027-01-01")', None),
    # invalid text or arguments: null, as FEEL gives
    ('=date("2026-13-01")', None),
    ('=date("next tuesday")', None),
    ('=time("25:00:00")', None),
    ('=duration("P1Y2D")', None),
    ('=duration("P")', None),
    ('=date and time("2026-12-07T10:30:00@Mars/Olympus")', None),
    ("=date(2026, 2, 30)", None),
    ("=date(1)", None),
    # arithmetic
    ('=date("2026-01-31") + duration("P1M")', "2026-02-28"),
    ('=@"2024-02-29" + @"P1Y"', "2025-02-28"),
    ('=date("2026-12-07") + duration("P30D")', "2027-01-06"),
    ('=duration("P1D") + date("2026-12-07")', "2026-12-08"),
    ('=date and time("2026-12-07T10:00:00Z") + duration("PT36H")', "2026-12-08T22:00:00Z"),
    ('=date and time("2026-12-07T10:00:00Z") - duration("P1M")', "2026-11-07T10:00:00Z"),
    ('=date("2026-03-01") - date("2026-02-01")', "P28D"),
    ('=date and time("2026-12-08T10:00:00Z") - date and time("2026-12-07T08:30:00Z")', "P1DT1H30M"),
    ('=date and time("2026-12-08T10:00:00Z") - date and time("2026-12-07T08:30:00")', None),
    ('=time("10:00:00") + duration("PT15H")', "01:00:00"),
    ('=time("10:00:00") - time("08:15:00")', "PT1H45M"),
    ('=duration("P1D") * 2.5', "P2DT12H"),
    ('=2 * duration("PT30M")', "PT1H"),
    ('=duration("P1D") / duration("PT1H")', 24),
    ('=duration("P1Y") / 2', "P6M"),
    ('=duration("P1D") / 0', None),
    ('=-duration("P1D")', "-P1D"),
    ('=-date("2026-12-07")', None),
    ('=date("2026-12-07") + date("2026-12-07")', None),
    ('=date("2026-12-07") + 1', None),
    # comparison
    ('=date("2026-12-07") < date("2027-01-01")', True),
    ('=@"2026-12-07T10:00:00+01:00" = @"2026-12-07T09:00:00Z"', True),
    ('=@"2026-12-07T10:00:00" < @"2026-12-07T11:00:00Z"', None),
    ('=duration("PT60M") = duration("PT1H")', True),
    ('=duration("P1D") > duration("PT23H")', True),
    ('=date("2026-12-07") between date("2026-01-01") and date("2026-12-31")', True),
    ('=date("2026-12-07") in [date("2026-12-07"), date("2026-12-08")]', True),
    ('=date("2026-12-07") = "2026-12-07"', None),
    # properties
    ('=date("2026-12-07").year', 2026),
    ('=date("2026-12-07").weekday', 1),
    ('=date and time("2026-12-07T10:30:15Z").minute', 30),
    ('=date and time("2026-12-07T10:30:00@Europe/Berlin").timezone', "Europe/Berlin"),
    ('=time("10:30:00+02:00").time offset', "PT2H"),
    ('=duration("P2DT3H").hours', 3),
    ('=duration("P14M").years', 1),
    ('=date("2026-12-07").hour', None),
    ('=day of week(date("2026-12-07"))', "Monday"),
    ('=day of year(date("2026-02-01"))', 32),
    ('=week of year(date("2026-12-07"))', 50),
    ('=month of year(date("2026-12-07"))', "December"),
    ('=last day of month(date("2028-02-10"))', "2028-02-29"),
    ('=abs(duration("-PT5M"))', "PT5M"),
    # the engine's clock
    ("=now()", "2026-12-07T10:20:00Z"),
    ("=today()", "2026-12-07"),
    ('=now() + duration("P2D")', "2026-12-09T10:20:00Z"),
    ('=now() > date and time("2026-01-01T00:00:00Z")', True),
    # lists, strings, numbers and contexts
    ('=string join(["a", "b", "c"], ", ")', "a, b, c"),
    ('=string join(["a", null, "c"])', "ac"),
    ("=string join([1, 2])", None),
    ("=index of([1, 2, 1], 1)", [1, 3]),
    ("=distinct values([1, 2, 1, {a: 1}, {a: 1}, [1], [1]])", [1, 2, {"a": 1}, [1]]),
    ("=reverse([1, 2, 3])", [3, 2, 1]),
    ("=flatten([1, [2, [3, [4]]]])", [1, 2, 3, 4]),
    ("=sublist([1, 2, 3, 4], 2, 2)", [2, 3]),
    ("=sublist([1, 2, 3, 4], -1)", [4]),
    ("=concatenate([1], [2, 3], [])", [1, 2, 3]),
    ("=is empty([])", True),
    ("=mean([1, 2, 3, 4])", 2.5),
    ("=mean(1, 2, 3)", 2),
    ("=product(2, 3, 4)", 24),
    ("=all([true, true])", True),
    ("=any(false, null)", None),
    ("=any(false, true)", True),
    ("=decimal(1 / 3, 2)", 0.33),
    ("=decimal(2.5, 0)", 2),
    ("=round half up(2.5)", 3),
    ("=round half down(2.5)", 2),
    ("=round up(1.21, 1)", 1.3),
    ("=round down(-1.29, 1)", -1.2),
    ("=modulo(-7, 3)", 2),
    ("=modulo(7, 0)", None),
    ("=sqrt(16)", 4),
    ("=sqrt(-1)", None),
    ("=odd(5)", True),
    ("=even(5)", False),
    ('=trim("  x  ")', "x"),
    ('=substring before("user@example.org", "@")', "user"),
    ('=substring after("user@example.org", "@")', "example.org"),
    ('=substring after("plain", "@")', ""),
    ("=get entries({a: 1})", [{"key": "a", "value": 1}]),
    ("=context merge([{a: 1}, {b: 2, a: 3}])", {"a": 3, "b": 2}),
    ("=context merge({a: 1}, {b: 2})", {"a": 1, "b": 2}),
]


@pytest.fixture(autouse=True)
def engine_clock() -> Iterator[None]:
    use_clock(FixedClock(MOMENT_MS))
    yield
    use_clock(None)


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_result(text: str, expected: Any) -> None:
    assert evaluate(text) == expected


def test_now_is_the_engine_clock_not_the_machine_s() -> None:
    assert evaluate("=now()") == evaluate("=now()") == "2026-12-07T10:20:00Z"
    use_clock(FixedClock(MOMENT_MS + 1500))
    assert evaluate("=now()") == "2026-12-07T10:20:01.5Z"
    use_clock(None)
    assert evaluate("=now()") != "2026-12-07T10:20:01.5Z"  # the machine's clock again


def test_a_result_is_json_a_due_date_or_timer_takes() -> None:
    due = evaluate('=now() + duration("P2D")')
    assert isinstance(due, str)
    from datetime import datetime

    assert datetime.fromisoformat(due).tzinfo is not None


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('=@"2026-13-01"', "month must be in 1..12"),
        ('=@"yesterday"', "is no date"),
        ('=@"P1Y2D"', "mixes years or months"),
        ('=@"10:00:00@Nowhere/City"', "unknown time zone"),
    ],
)
def test_a_bad_temporal_literal_is_a_syntax_error_at_its_position(text: str, fragment: str) -> None:
    with pytest.raises(FeelSyntaxError) as raised:
        evaluate(text)
    assert fragment in str(raised.value)
    assert raised.value.position == 0


def test_huge_values_are_null_not_errors() -> None:
    assert evaluate('=date("9999-12-31") + duration("P1D")') is None
    assert evaluate('=duration("P999999999D") * 1000') is None
    assert evaluate('=duration("P999999999DT999999999H")') is None


def test_a_builtin_s_list_counts_toward_the_step_limit() -> None:
    with pytest.raises(FeelEvaluationError, match="steps"):
        evaluate("=for i in 1..2000 return concatenate(big, big)", {"big": list(range(1000))})
