"""ISO-8601 timer values: durations (`PT10S`, `P1DT2H`, `P2W`), dates (`2026-12-01T08:00:00Z`,
with an offset or `Z`) and repeating cycles (`R3/PT10S`, unbounded `R/PT1H`, with a start
`R2/2026-12-01T08:00:00Z/P1D`), or cycles as cron expressions (`0 0 9 * * MON-FRI`, `cron`),
which repeat without end. All times are epoch milliseconds (UTC).

Years and months are calendar units: `P1M` from January 31 is the last day of February.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from partita.bpmn import cron

_DURATION = re.compile(
    r"^P(?:(?P<years>\d+)Y)?(?:(?P<months>\d+)M)?(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:[.,]\d+)?)S)?)?$"
)
_REPETITIONS = re.compile(r"^R(\d*)$")


class ScheduleError(ValueError):
    """A timer value that is not valid ISO-8601; the message says what was expected."""


@dataclass(frozen=True, slots=True)
class Cycle:
    repetitions: int
    """How many times the timer fires in total; -1 means without end."""
    interval: str
    """The ISO-8601 duration between firings."""
    start: int | None = None
    """The first firing (epoch ms) when the cycle names one; else now + interval."""


def _check_duration(text: str) -> re.Match[str]:
    match = _DURATION.match(text.strip())
    if match is None or text.strip() in ("P", "PT") or text.strip().endswith("T"):
        raise ScheduleError(f"'{text}' is not an ISO-8601 duration (e.g. PT10S, PT5M, P1DT2H, P2W)")
    return match


def _add_months(moment: datetime, months: int) -> datetime:
    month_index = moment.month - 1 + months
    year = moment.year + month_index // 12
    month = month_index % 12 + 1
    day = min(moment.day, calendar.monthrange(year, month)[1])
    return moment.replace(year=year, month=month, day=day)


def after(duration: str, start_ms: int) -> int:
    """`start_ms` plus the ISO-8601 `duration`, in epoch milliseconds."""
    parts = {k: v for k, v in _check_duration(duration).groupdict().items() if v is not None}
    moment = datetime.fromtimestamp(start_ms / 1000, UTC)
    months = int(parts.get("years", 0)) * 12 + int(parts.get("months", 0))
    if months:
        moment = _add_months(moment, months)
    moment += timedelta(
        weeks=int(parts.get("weeks", 0)),
        days=int(parts.get("days", 0)),
        hours=int(parts.get("hours", 0)),
        minutes=int(parts.get("minutes", 0)),
        seconds=float(parts.get("seconds", "0").replace(",", ".")),
    )
    return round(moment.timestamp() * 1000)


def date(text: str) -> int:
    """An ISO-8601 date-time with a zone (`Z` or an offset) as epoch milliseconds."""
    value = text.strip()
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ScheduleError(
            f"'{text}' is not an ISO-8601 date-time (e.g. 2026-12-01T08:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        raise ScheduleError(f"'{text}' has no time zone; add Z or an offset such as +01:00")
    return round(moment.timestamp() * 1000)


def cycle(text: str) -> Cycle:
    """`R<n>/<duration>`, `R/<duration>` (without end) or `R<n>/<start date>/<duration>`."""
    parts = text.strip().split("/")
    repetitions = _REPETITIONS.match(parts[0]) if parts else None
    if repetitions is None or len(parts) not in (2, 3):
        raise ScheduleError(
            f"'{text}' is not an ISO-8601 repeating interval (e.g. R3/PT10S or R/PT1H)"
        )
    count = int(repetitions.group(1)) if repetitions.group(1) else -1
    if count == 0:
        raise ScheduleError(f"'{text}' repeats zero times")
    interval = parts[-1]
    _check_duration(interval)
    start = date(parts[1]) if len(parts) == 3 else None
    return Cycle(count, interval, start)


def first_due(kind: str, text: str, now_ms: int) -> tuple[int, int]:
    """(due date, repetitions) of a timer of `kind` ("duration", "date", "cycle") created now."""
    if kind == "duration":
        return after(text, now_ms), 1
    if kind == "date":
        return date(text), 1
    if kind == "cycle" and cron.looks_like_cron(text):
        return _cron_next(text, now_ms), -1
    if kind == "cycle":
        parsed = cycle(text)
        due = parsed.start if parsed.start is not None else after(parsed.interval, now_ms)
        return due, parsed.repetitions
    raise ScheduleError(f"unknown timer kind {kind!r}")


def next_due(text: str, previous_ms: int) -> int:
    """When a cycle fires next after its firing at `previous_ms`."""
    if cron.looks_like_cron(text):
        return _cron_next(text, previous_ms)
    return after(cycle(text).interval, previous_ms)


def _cron_next(text: str, after_ms: int) -> int:
    try:
        return cron.next_after(text, after_ms)
    except cron.CronError as error:
        raise ScheduleError(str(error)) from None
