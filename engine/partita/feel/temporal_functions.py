"""FEEL's built-in functions for dates, times and durations (`date()`, `time()`, `date and
time()`, `duration()`, `years and months duration()`, `now()`, `today()` and the calendar
functions), merged into `builtins.FUNCTIONS`. Wrong arguments give null, as FEEL does.

`now()` and `today()` read the engine's clock (`use_clock`): the processing context of the batch
being processed, whose `now` is the time the engine processes the command, never the machine's,
so a retried command evaluates to the same moment. Outside the engine (tools, tests) it is the
machine's clock.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any, Protocol

from partita.feel.temporal import (
    YearsMonths,
    add_months,
    months_between,
    parse_date,
    parse_date_time,
    parse_duration,
    parse_time,
)

__all__ = ["FUNCTIONS", "Clock", "FixedClock", "use_clock"]


class Clock(Protocol):
    """What `now()` reads: `now`, milliseconds since the epoch (the engine's processing
    context, whose `now` is the command's time)."""

    @property
    def now(self) -> int: ...


@dataclass(frozen=True, slots=True)
class FixedClock:
    """A clock that stays at `now` (tools and tests)."""

    now: int


_CLOCK: ContextVar[Clock | None] = ContextVar("feel_clock", default=None)
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def use_clock(clock: Clock | None) -> None:
    """Make `now()` and `today()` read `clock` in this thread's context (the engine: the batch's
    processing context, set once per batch, read only when an expression asks); None goes back
    to the machine's clock."""
    _CLOCK.set(clock)


def _now() -> datetime:
    clock = _CLOCK.get()
    if clock is None:
        return datetime.now(UTC).replace(microsecond=0)
    return datetime.fromtimestamp(clock.now / 1000, UTC)


def _int(value: Any) -> int | None:
    if isinstance(value, Decimal) and value == value.to_integral_value() and abs(value) < 10**9:
        return int(value)
    return None


def _date(*args: Any) -> date | None:
    try:
        if len(args) == 3:
            numbers = [_int(a) for a in args]
            if any(n is None for n in numbers):
                return None
            return date(*numbers)  # type: ignore[arg-type]
        (value,) = args
        if isinstance(value, str):
            return parse_date(value)
        if isinstance(value, datetime):
            return value.date()
        if isinstance(value, date):
            return value
    except (ValueError, OverflowError):
        return None
    return None


def _time(*args: Any) -> time | None:
    try:
        if len(args) >= 3:
            hour, minute, second = (_int(a) for a in args[:3])
            if hour is None or minute is None or second is None:
                return None
            zone = None
            if len(args) == 4 and args[3] is not None:
                if not isinstance(args[3], timedelta):
                    return None
                zone = timezone(args[3])
            return time(hour, minute, second, tzinfo=zone)
        (value,) = args
        if isinstance(value, str):
            return parse_time(value)
        if isinstance(value, datetime):
            return value.timetz()
        if isinstance(value, time):
            return value
        if isinstance(value, date):
            return time()
    except (ValueError, OverflowError):
        return None
    return None


def _date_and_time(*args: Any) -> datetime | None:
    try:
        if len(args) == 2:
            day, clock = args
            if not isinstance(day, date) or not isinstance(clock, time):
                return None
            base = day.date() if isinstance(day, datetime) else day
            return datetime.combine(base, clock.replace(tzinfo=None), clock.tzinfo)
        (value,) = args
        if isinstance(value, str):
            if "T" not in value:
                return datetime.combine(parse_date(value), time())
            return parse_date_time(value)
        if isinstance(value, datetime):
            return value
        if isinstance(value, date):
            return datetime.combine(value, time())
    except (ValueError, OverflowError):
        return None
    return None


def _duration(value: Any) -> timedelta | YearsMonths | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_duration(value)
    except (ValueError, OverflowError):
        return None


def _years_and_months(start: Any, end: Any) -> YearsMonths | None:
    if not isinstance(start, date) or not isinstance(end, date):
        return None
    return YearsMonths(months_between(_day(start), _day(end)))


def _day(value: date) -> date:
    return value.date() if isinstance(value, datetime) else value


def _day_of_week(value: Any) -> str | None:
    return _WEEKDAYS[value.weekday()] if isinstance(value, date) else None


def _day_of_year(value: Any) -> Decimal | None:
    return Decimal(value.timetuple().tm_yday) if isinstance(value, date) else None


def _week_of_year(value: Any) -> Decimal | None:
    return Decimal(value.isocalendar().week) if isinstance(value, date) else None


def _month_of_year(value: Any) -> str | None:
    return _MONTHS[value.month - 1] if isinstance(value, date) else None


def _last_day_of_month(value: Any) -> date | None:
    if not isinstance(value, date):
        return None
    return add_months(_day(value).replace(day=1), 1) - timedelta(days=1)


FUNCTIONS: dict[str, tuple[Any, int, int]] = {
    "date": (_date, 1, 3),
    "time": (_time, 1, 4),
    "date and time": (_date_and_time, 1, 2),
    "duration": (_duration, 1, 1),
    "years and months duration": (_years_and_months, 2, 2),
    "now": (_now, 0, 0),
    "today": (lambda: _now().date(), 0, 0),
    "day of week": (_day_of_week, 1, 1),
    "day of year": (_day_of_year, 1, 1),
    "week of year": (_week_of_year, 1, 1),
    "month of year": (_month_of_year, 1, 1),
    "last day of month": (_last_day_of_month, 1, 1),
}
"""name: (function, minimum arguments, maximum arguments), merged into `builtins.FUNCTIONS`."""
