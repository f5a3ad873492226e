"""Cron expressions in timer cycles, as Zeebe takes them (Spring's format): six fields, second
minute hour day-of-month month day-of-week, each `*` (or `?` for the days), a number, a range
`a-b`, a list `a,b`, a step `*/n` or `a-b/n`, month and day names (`JAN`, `MON-FRI`; day 0 and 7
are Sunday), or one of the macros `@yearly` (`@annually`), `@monthly`, `@weekly`, `@daily`
(`@midnight`) and `@hourly`. Times are UTC. A day matches when both day fields do (`?` and
`*` match every day). Not supported (refused with the reason): `L`, `W` and `#`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_MACROS = {
    "@yearly": "0 0 0 1 1 *",
    "@annually": "0 0 0 1 1 *",
    "@monthly": "0 0 0 1 * *",
    "@weekly": "0 0 0 * * 0",
    "@daily": "0 0 0 * * *",
    "@midnight": "0 0 0 * * *",
    "@hourly": "0 0 * * * *",
}
_MONTHS = {
    m: i
    for i, m in enumerate(
        ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"], 1
    )
}
_DAYS = {d: i for i, d in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"])}


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    low: int
    high: int
    names: dict[str, int]


_FIELDS = (
    _Field("second", 0, 59, {}),
    _Field("minute", 0, 59, {}),
    _Field("hour", 0, 23, {}),
    _Field("day of month", 1, 31, {}),
    _Field("month", 1, 12, _MONTHS),
    _Field("day of week", 0, 7, _DAYS),
)
_SEARCH_YEARS = 5


class CronError(ValueError):
    """A cron expression that cannot be read; the message says which part and why."""


@dataclass(frozen=True, slots=True)
class Cron:
    seconds: frozenset[int]
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    """0 is Sunday (7 is read as 0)."""


def looks_like_cron(text: str) -> bool:
    """A timer cycle written as cron rather than as an ISO-8601 repeating interval."""
    value = text.strip()
    return value.startswith("@") or len(value.split()) == 6


def parse(text: str) -> Cron:
    value = _MACROS.get(text.strip().lower(), text.strip())
    parts = value.split()
    if len(parts) != 6:
        raise CronError(
            f"'{text}' is not a cron expression: it needs six fields (second minute hour"
            " day-of-month month day-of-week), e.g. 0 0 9 * * MON-FRI"
        )
    sets = [_values(part, field, text) for part, field in zip(parts, _FIELDS, strict=True)]
    weekdays = frozenset(0 if d == 7 else d for d in sets[5])
    return Cron(sets[0], sets[1], sets[2], sets[3], sets[4], weekdays)


def _values(part: str, field: _Field, text: str) -> frozenset[int]:
    found: set[int] = set()
    for written in part.upper().split(","):
        if any(mark in written for mark in ("L", "W", "#")) and not any(
            name in written for name in field.names
        ):
            raise CronError(
                f"'{text}': {field.name} '{written}' uses L, W or #, which are not supported"
            )
        item, _, step_text = written.partition("/")
        step = _number(step_text, _Field(field.name, 1, field.high, {}), text) if step_text else 1
        if item in ("*", "?"):
            first, last = field.low, field.high
        elif "-" in item:
            start, _, end = item.partition("-")
            first, last = _number(start, field, text), _number(end, field, text)
            if first > last:
                raise CronError(f"'{text}': the {field.name} range {item} runs backwards")
        else:
            first = _number(item, field, text)
            last = field.high if step > 1 else first
        found.update(range(first, last + 1, step))
    return frozenset(found)


def _number(item: str, field: _Field, text: str) -> int:
    if item in field.names:
        return field.names[item]
    if not item.isdigit():
        raise CronError(f"'{text}': '{item}' is not a valid {field.name}")
    number = int(item)
    if not field.low <= number <= field.high:
        raise CronError(f"'{text}': {field.name} {number} is not within {field.low}-{field.high}")
    return number


def next_after(text: str, after_ms: int) -> int:
    """The first time (epoch ms) after `after_ms` the expression names; CronError when it names
    none within five years (e.g. February 30)."""
    cron = parse(text)
    moment = datetime.fromtimestamp(after_ms // 1000 + 1, UTC)
    end = moment + timedelta(days=366 * _SEARCH_YEARS)
    while moment < end:
        if moment.month not in cron.months:
            year, month = (
                (moment.year + 1, 1) if moment.month == 12 else (moment.year, moment.month + 1)
            )
            moment = moment.replace(year=year, month=month, day=1, hour=0, minute=0, second=0)
        elif moment.day not in cron.days or (moment.isoweekday() % 7) not in cron.weekdays:
            moment = (moment + timedelta(days=1)).replace(hour=0, minute=0, second=0)
        elif moment.hour not in cron.hours:
            moment = (moment + timedelta(hours=1)).replace(minute=0, second=0)
        elif moment.minute not in cron.minutes:
            moment = (moment + timedelta(minutes=1)).replace(second=0)
        elif moment.second not in cron.seconds:
            moment += timedelta(seconds=1)
        else:
            return round(moment.timestamp()) * 1000
    raise CronError(f"'{text}' names no time in the next {_SEARCH_YEARS} years")
