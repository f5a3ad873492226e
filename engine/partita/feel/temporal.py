"""FEEL's temporal values: dates, times, dates and times, and the two kinds of duration; their
ISO 8601 text both ways, their arithmetic, comparisons and properties.

Inside FEEL they are `datetime.date`, `datetime.time` (local, or with an offset),
`datetime.datetime` (local, or with an offset or a zone id), `datetime.timedelta` (a days and
time duration) and `YearsMonths`. Crossing into JSON (variables, results) they become ISO 8601
text, as Zeebe writes them: `2026-12-07`, `10:30:00`, `2026-12-07T10:30:00Z`,
`2026-12-07T10:30:00+01:00` (a zone id gives its offset at that moment), `P1DT2H`, `P1Y2M`.
So a timer, a due date or a follow-up date given by an expression takes them as it takes text.
A string is never taken for a date by itself: `date("2026-12-07")` or `@"2026-12-07"` make one.

The functions that build them, and the clock `now()` reads, are in `temporal_functions`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = [
    "YearsMonths",
    "add_months",
    "arith",
    "compare",
    "is_temporal",
    "member",
    "months_between",
    "parse_literal",
    "to_text",
    "type_of",
]

_MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True, order=True)
class YearsMonths:
    """A years and months duration, in months (negative for a negative duration)."""

    months: int


def is_temporal(value: Any) -> bool:
    return isinstance(value, date | time | timedelta | YearsMonths)


def type_of(value: Any) -> str | None:
    """FEEL's name of a temporal value's type, None for anything else."""
    if isinstance(value, datetime):
        return "date and time"
    if isinstance(value, date):
        return "date"
    if isinstance(value, time):
        return "time"
    if isinstance(value, timedelta):
        return "days and time duration"
    if isinstance(value, YearsMonths):
        return "years and months duration"
    return None


# --- text -> values --------------------------------------------------------------------------

_DATE = r"(-?\d{4,9})-(\d{2})-(\d{2})"
_TIME = r"(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?"
_ZONE = r"(Z|[+-]\d{2}:\d{2}(?::\d{2})?)?(?:@([A-Za-z][A-Za-z0-9_+\-/]{0,63}))?"
_DATE_RE = re.compile(_DATE)
_TIME_RE = re.compile(_TIME + _ZONE)
_DATE_TIME_RE = re.compile(_DATE + "T" + _TIME + _ZONE)
_DURATION_RE = re.compile(
    r"(-)?P(?:(\d{1,9})Y)?(?:(\d{1,9})M)?(?:(\d{1,9})D)?"
    r"(?:T(?:(\d{1,9})H)?(?:(\d{1,9})M)?(?:(\d{1,9})(?:\.(\d{1,9}))?S)?)?"
)


def _zone(offset: str | None, zone_id: str | None) -> tzinfo | None:
    """The offset or zone id of a parsed time; ValueError for an unknown zone id."""
    if zone_id is not None:
        try:
            return ZoneInfo(zone_id)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone '{zone_id}'") from None
    if offset is None:
        return None
    if offset == "Z":
        return UTC
    sign = -1 if offset[0] == "-" else 1
    parts = [int(p) for p in offset[1:].split(":")]
    delta = timedelta(hours=parts[0], minutes=parts[1], seconds=parts[2] if len(parts) > 2 else 0)
    if delta >= timedelta(hours=18):
        raise ValueError(f"offset {offset} is out of range")
    return timezone(sign * delta)


def _time_of(groups: tuple[str | None, ...]) -> time:
    hour, minute, second, fraction, offset, zone_id = groups
    micro = int((fraction or "0")[:6].ljust(6, "0"))
    return time(int(hour or 0), int(minute or 0), int(second or 0), micro, _zone(offset, zone_id))


def parse_date(text: str) -> date:
    match = _DATE_RE.fullmatch(text)
    if match is None:
        raise ValueError(f"'{text}' is no date (yyyy-MM-dd)")
    return date(*(int(g) for g in match.groups()))


def parse_time(text: str) -> time:
    match = _TIME_RE.fullmatch(text)
    if match is None:
        raise ValueError(f"'{text}' is no time (HH:mm:ss, with an optional offset or @zone)")
    return _time_of(match.groups())


def parse_date_time(text: str) -> datetime:
    match = _DATE_TIME_RE.fullmatch(text)
    if match is None:
        raise ValueError(f"'{text}' is no date and time (yyyy-MM-ddTHH:mm:ss[offset or @zone])")
    groups = match.groups()
    day = date(*(int(g) for g in groups[:3]))
    clock = _time_of(groups[3:])
    return datetime.combine(day, clock.replace(tzinfo=None), clock.tzinfo)


def parse_duration(text: str) -> timedelta | YearsMonths:
    match = _DURATION_RE.fullmatch(text)
    if match is None or text.rstrip("-") in ("P", "PT") or text.endswith("T"):
        raise ValueError(f"'{text}' is no ISO 8601 duration (e.g. P1DT2H or P1Y2M)")
    sign, years, months, days, hours, minutes, seconds, fraction = match.groups()
    negative = -1 if sign else 1
    if years or months:
        if days or hours or minutes or seconds:
            raise ValueError(
                f"'{text}' mixes years or months with days or time: FEEL has no such duration"
            )
        return YearsMonths(negative * (int(years or 0) * 12 + int(months or 0)))
    micro = int((fraction or "0")[:6].ljust(6, "0"))
    delta = timedelta(
        days=int(days or 0),
        hours=int(hours or 0),
        minutes=int(minutes or 0),
        seconds=int(seconds or 0),
        microseconds=micro,
    )
    return -delta if sign else delta


def parse_literal(text: str) -> Any:
    """The value of a temporal literal `@"..."`: a duration, a date and time, a time or a date
    by its form; ValueError saying what is wrong."""
    if text.lstrip("-").startswith("P"):
        return parse_duration(text)
    if "T" in text:
        return parse_date_time(text)
    if ":" in text:
        return parse_time(text)
    return parse_date(text)


# --- values -> text --------------------------------------------------------------------------


def _offset_text(value: timedelta) -> str:
    if not value:
        return "Z"
    sign = "-" if value < timedelta(0) else "+"
    seconds = int(abs(value).total_seconds())
    text = f"{sign}{seconds // 3600:02d}:{seconds % 3600 // 60:02d}"
    return text + (f":{seconds % 60:02d}" if seconds % 60 else "")


def _clock_text(value: time | datetime) -> str:
    text = f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    return text


def _date_text(value: date) -> str:
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"


def _duration_text(value: timedelta) -> str:
    if value < timedelta(0):
        return "-" + _duration_text(-value)
    days, seconds, micro = value.days, value.seconds, value.microseconds
    text = "P" + (f"{days}D" if days else "")
    hours, minutes, secs = seconds // 3600, seconds % 3600 // 60, seconds % 60
    clock = (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "")
    if secs or micro:
        clock += f"{secs}.{micro:06d}".rstrip("0").rstrip(".") + "S"
    if clock:
        text += "T" + clock
    return text if text != "P" else "PT0S"


def to_text(value: Any, *, zone_ids: bool = False) -> str:
    """ISO 8601 text of a temporal value. `zone_ids` writes a zoned date and time as FEEL's
    `string()` does (`...@Europe/Berlin`); JSON gets its offset at that moment instead."""
    if isinstance(value, datetime):
        text = _date_text(value) + "T" + _clock_text(value)
        if value.tzinfo is None:
            return text
        if zone_ids and isinstance(value.tzinfo, ZoneInfo):
            return f"{text}@{value.tzinfo.key}"
        offset = value.utcoffset()
        return text + _offset_text(offset or timedelta(0))
    if isinstance(value, date):
        return _date_text(value)
    if isinstance(value, time):
        text = _clock_text(value)
        if value.tzinfo is None:
            return text
        if zone_ids and isinstance(value.tzinfo, ZoneInfo):
            return f"{text}@{value.tzinfo.key}"
        offset = value.tzinfo.utcoffset(None)
        return text + _offset_text(offset or timedelta(0))
    if isinstance(value, timedelta):
        return _duration_text(value)
    if isinstance(value, YearsMonths):
        if value.months < 0:
            return "-" + to_text(YearsMonths(-value.months))
        years, months = divmod(value.months, 12)
        text = "P" + (f"{years}Y" if years else "") + (f"{months}M" if months else "")
        return text if text != "P" else "P0M"
    raise TypeError(f"not a temporal value: {value!r}")


# --- arithmetic, comparison, properties -------------------------------------------------------


def add_months(value: date, months: int) -> date:
    """`value` moved by `months`, its day kept or clamped to the month's last (Jan 31 + 1
    month = Feb 28 or 29), as FEEL (java.time) does."""
    index = value.year * 12 + value.month - 1 + months
    year, month = divmod(index, 12)
    month += 1
    first_of_next = date(year + (month == 12), month % 12 + 1, 1)
    last = (first_of_next - timedelta(days=1)).day
    return value.replace(year=year, month=month, day=min(value.day, last))


def _scale(value: timedelta, factor: Decimal) -> timedelta:
    micros = Decimal(value // _MICROSECOND) * factor
    return timedelta(microseconds=int(micros.to_integral_value()))


def months_between(start: date, end: date) -> int:
    months = (end.year - start.year) * 12 + end.month - start.month
    if months > 0 and end.day < start.day:
        months -= 1
    elif months < 0 and end.day > start.day:
        months += 1
    return months


def arith(op: str, left: Any, right: Any) -> Any:
    """`left op right` where one side is temporal: the FEEL result, or None where FEEL has
    none (date + date, a duration times a duration, an overflow, ...)."""
    try:
        return _arith(op, left, right)
    except (OverflowError, ValueError, ArithmeticError, TypeError):
        return None


def _arith(op: str, left: Any, right: Any) -> Any:
    if op == "+" and isinstance(right, date | time) and isinstance(left, timedelta | YearsMonths):
        left, right = right, left  # duration + date is date + duration
    if op in ("+", "-"):
        sign = 1 if op == "+" else -1
        if isinstance(right, timedelta):
            if isinstance(left, datetime):
                return left + sign * right
            if isinstance(left, date):
                moved = datetime.combine(left, time()) + sign * right
                return moved.date()
            if isinstance(left, time):
                moved = datetime.combine(date(2000, 1, 1), left) + sign * right
                return moved.timetz()
            if isinstance(left, timedelta):
                return left + sign * right
            return None
        if isinstance(right, YearsMonths):
            if isinstance(left, datetime):
                return datetime.combine(add_months(left.date(), sign * right.months), left.timetz())
            if isinstance(left, date):
                return add_months(left, sign * right.months)
            if isinstance(left, YearsMonths):
                return YearsMonths(left.months + sign * right.months)
            return None
        if op == "-" and type(left) is type(right):
            if isinstance(left, datetime):
                if (left.tzinfo is None) != (right.tzinfo is None):
                    return None
                return left - right
            if isinstance(left, date):
                return timedelta(days=(left - right).days)
            if isinstance(left, time):
                day = date(2000, 1, 1)
                later, earlier = datetime.combine(day, left), datetime.combine(day, right)
                if (left.tzinfo is None) != (right.tzinfo is None):
                    return None
                return later - earlier
        return None
    if op == "*":
        if isinstance(left, Decimal):
            left, right = right, left
        if not isinstance(right, Decimal):
            return None
        if isinstance(left, timedelta):
            return _scale(left, right)
        if isinstance(left, YearsMonths):
            return YearsMonths(int((Decimal(left.months) * right).to_integral_value()))
        return None
    if op == "/":
        if isinstance(left, timedelta) and isinstance(right, Decimal):
            return None if right == 0 else _scale(left, 1 / right)
        if isinstance(left, YearsMonths) and isinstance(right, Decimal):
            return None if right == 0 else YearsMonths(int(Decimal(left.months) / right))
        if isinstance(left, timedelta) and isinstance(right, timedelta):
            if not right:
                return None
            return Decimal(left // _MICROSECOND) / Decimal(right // _MICROSECOND)
        if isinstance(left, YearsMonths) and isinstance(right, YearsMonths):
            return None if not right.months else Decimal(left.months) / Decimal(right.months)
    return None


def comparable(left: Any, right: Any) -> bool:
    """Whether FEEL orders these two temporal values: the same type, and for dates and times
    both local or both with a zone."""
    if type_of(left) != type_of(right) or type_of(left) is None:
        return False
    if isinstance(left, datetime | time):
        return (left.tzinfo is None) == (right.tzinfo is None)
    return True


def compare(left: Any, right: Any) -> int | None:
    """-1, 0 or 1; None when FEEL cannot order them."""
    if not comparable(left, right):
        return None
    if isinstance(left, time) and left.tzinfo is not None:
        day = date(2000, 1, 1)
        left, right = datetime.combine(day, left), datetime.combine(day, right)
    try:
        return int(left > right) - int(left < right)
    except TypeError:
        return None


def member(value: Any, name: str) -> Any:
    """A property of a temporal value (`.year`, `.hour`, `.days`, ...), None if it has none."""
    if isinstance(value, date):
        if name in ("year", "month", "day"):
            return Decimal(getattr(value, name))
        if name == "weekday":
            return Decimal(value.isoweekday())
    if isinstance(value, datetime | time):
        if name in ("hour", "minute", "second"):
            return Decimal(getattr(value, name))
        if name == "time offset":
            return value.utcoffset()
        if name == "timezone":
            return value.tzinfo.key if isinstance(value.tzinfo, ZoneInfo) else None
    if isinstance(value, timedelta):
        total = abs(value)
        sign = -1 if value < timedelta(0) else 1
        parts = {
            "days": total.days,
            "hours": total.seconds // 3600,
            "minutes": total.seconds % 3600 // 60,
            "seconds": total.seconds % 60,
        }
        if name in parts:
            return Decimal(sign * parts[name])
    if isinstance(value, YearsMonths):
        sign = -1 if value.months < 0 else 1
        years, months = divmod(abs(value.months), 12)
        if name == "years":
            return Decimal(sign * years)
        if name == "months":
            return Decimal(sign * months)
    return None
