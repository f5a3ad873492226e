"""One parser per type of setting: (the variable's text, its name) -> the value, or a
ConfigError that names the variable and the value. A boolean takes true/false, 1/0 or yes/no
in any case and refuses anything else."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from partita.errors import ConfigError

T = TypeVar("T")

Parse = Callable[[str, str], T]
"""(the text of the variable, its name) -> the value, or ConfigError naming both."""

_TRUE = frozenset({"true", "1", "yes"})
_FALSE = frozenset({"false", "0", "no"})


def parse_bool(text: str, name: str) -> bool:
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name}={text!r} is not a boolean: use true/false, 1/0 or yes/no")


def parse_int(text: str, name: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ConfigError(f"{name}={text!r} is not an integer") from None


def parse_str(text: str, name: str) -> str:
    return text.strip()


def parse_optional_str(text: str, name: str) -> str | None:
    return text.strip() or None


def parse_path(text: str, name: str) -> Path | None:
    return Path(text.strip()).expanduser() if text.strip() else None


def parse_list(text: str, name: str) -> tuple[str, ...]:
    """A comma-separated list; blanks around items and empty items are dropped."""
    return tuple(item.strip() for item in text.split(",") if item.strip())


def parse_duration(text: str, name: str) -> int:
    """Milliseconds from an ISO-8601 duration (`PT5M`) or a plain number of milliseconds."""
    from partita.bpmn.schedule import ScheduleError, after  # lazy: partita.bpmn costs 65 ms

    value = text.strip()
    if value.isdigit():
        return int(value)
    try:
        return after(value, 0)
    except ScheduleError as error:
        raise ConfigError(f"{name}={text!r}: {error}") from None


def parse_positions(text: str, name: str) -> frozenset[tuple[int, int]]:
    """`PARTITION:OFFSET,...` (e.g. `2:1234,0:77`) as (partition, offset) pairs."""
    positions = set()
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        partition, colon, offset = item.partition(":")
        try:
            if not colon:
                raise ValueError
            position = (int(partition), int(offset))
        except ValueError:
            raise ConfigError(
                f"{name}: {item!r} is not PARTITION:OFFSET (e.g. 2:1234); the value"
                " is a comma-separated list of such positions"
            ) from None
        if min(position) < 0:
            raise ConfigError(f"{name}: {item!r}: partition and offset must not be negative")
        positions.add(position)
    return frozenset(positions)


def parse_choice(*choices: str) -> Parse[str]:
    def parse(text: str, name: str) -> str:
        value = text.strip().lower()
        if value not in choices:
            raise ConfigError(f"{name}={text!r}: use one of {', '.join(choices)}")
        return value

    return parse
