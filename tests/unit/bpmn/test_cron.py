"""Cron expressions in timer cycles (Spring's six fields, as Zeebe reads them): when they fire
next, and what is refused with the reason."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from partita.bpmn.cron import CronError, looks_like_cron, next_after, parse
from partita.bpmn.schedule import ScheduleError, first_due, next_due


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    ("expression", "now", "expected"),
    [
        ("0 0 9 * * MON-FRI", "2026-12-04T10:00:00", "2026-12-07T09:00:00"),  # Friday -> Monday
        ("*/10 * * * * *", "2026-12-07T13:40:00", "2026-12-07T13:40:10"),
        ("0 15,45 * * * *", "2026-12-07T13:40:00", "2026-12-07T13:45:00"),
        ("0 0 0 1 JAN ?", "2026-12-07T13:40:00", "2027-01-01T00:00:00"),
        ("0 0 12 29 2 *", "2026-12-07T13:40:00", "2028-02-29T12:00:00"),  # the next leap day
        ("0 0 12 * * 7", "2026-12-07T13:40:00", "2026-12-13T12:00:00"),  # 7 is Sunday
        ("@daily", "2026-12-31T23:59:59", "2027-01-01T00:00:00"),
        ("@hourly", "2026-12-07T13:00:00", "2026-12-07T14:00:00"),  # strictly after
        ("0 0 8-18/5 * * *", "2026-12-07T13:40:00", "2026-12-07T18:00:00"),
    ],
)
def test_the_next_firing(expression: str, now: str, expected: str) -> None:
    assert next_after(expression, _ms(now)) == _ms(expected)


def test_a_cron_cycle_repeats_without_end() -> None:
    now = _ms("2026-12-07T13:40:00")
    assert first_due("cycle", "0 0 9 * * *", now) == (_ms("2026-12-08T09:00:00"), -1)
    assert next_due("0 0 9 * * *", _ms("2026-12-08T09:00:00")) == _ms("2026-12-09T09:00:00")
    assert next_due("R/PT1H", now) == now + 3_600_000  # ISO-8601 cycles as before
    assert looks_like_cron("@weekly") and not looks_like_cron("R3/PT10S")


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("0 0 9 * *", "it needs six fields"),
        ("0 61 * * * *", "minute 61 is not within 0-59"),
        ("0 0 9 L * *", "uses L, W or #, which are not supported"),
        ("0 0 9 * * FRI-MON", "runs backwards"),
        ("0 0 9 * * FUNDAY", "'FUNDAY' is not a valid day of week"),
        ("0 0 0 30 2 *", "names no time in the next 5 years"),
    ],
)
def test_what_cannot_be_read_says_why(expression: str, words: str) -> None:
    with pytest.raises(CronError, match=words):
        next_after(expression, _ms("2026-12-07T13:40:00"))
    with pytest.raises(ScheduleError):
        first_due("cycle", expression if len(expression.split()) == 6 else "x y z", 0)


def test_names_and_steps_read_as_spring_does() -> None:
    cron = parse("0 0/20 9-17 ? JAN-MAR,DEC SUN,SAT")
    assert cron.minutes == {0, 20, 40}
    assert cron.months == {1, 2, 3, 12}
    assert cron.weekdays == {0, 6}
