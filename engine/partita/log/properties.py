"""Kafka client properties files (`client.properties`, the `--command-config` of Kafka's tools).

The format is Java's `.properties`: `key=value`, `key: value` or `key value`; `#` and `!` start
comment lines; a trailing backslash continues a line; `\\t`, `\\n`, `\\uXXXX` and an escaped
separator are unescaped. Nothing else of the engine is imported here.
"""

from __future__ import annotations

from pathlib import Path

from partita.errors import ConfigError

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def read_properties(path: Path, what: str) -> dict[str, str]:
    """The properties of the file at `path`; ConfigError naming `what` (e.g. the variable that
    points at it) when it cannot be read or has a broken line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(
            f"{what}: cannot read Kafka client properties {str(path)!r}: {error.strerror}"
        ) from None
    return parse_properties(text, f"{what} ({path})")


def parse_properties(text: str, where: str) -> dict[str, str]:
    """Parse properties text; later keys win, as in Java. `where` prefixes error messages."""
    result: dict[str, str] = {}
    for number, line in _logical_lines(text):
        key, value = _split(line)
        if not key:
            raise ConfigError(f"{where}, line {number}: a value without a key: {line.strip()!r}")
        result[_unescape(key, where, number)] = _unescape(value, where, number)
    return result


def _logical_lines(text: str) -> list[tuple[int, str]]:
    lines: list[tuple[int, str]] = []
    pending: str | None = None
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.lstrip()
        if pending is None:
            if not stripped or stripped[0] in "#!":
                continue
            start, pending = number, ""
        pending += stripped
        trailing = len(pending) - len(pending.rstrip("\\"))
        if trailing % 2 == 1:  # an odd number of backslashes continues the line
            pending = pending[:-1]
            continue
        lines.append((start, pending))
        pending = None
    if pending is not None:
        lines.append((start, pending))
    return lines


def _split(line: str) -> tuple[str, str]:
    index = 0
    while index < len(line):
        char = line[index]
        if char == "\\":
            index += 2
            continue
        if char in "=: \t\f":
            break
        index += 1
    key = line[:index]
    rest = line[index:].lstrip(" \t\f")
    if rest[:1] in ("=", ":") and (index == len(line) or line[index] in " \t\f=:"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def _unescape(text: str, where: str, number: int) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 == len(text):
            out.append(char)
            index += 1
            continue
        code = text[index + 1]
        if code == "u":
            digits = text[index + 2 : index + 6]
            try:
                out.append(chr(int(digits, 16)))
            except ValueError:
                raise ConfigError(
                    f"{where}, line {number}: malformed \\u escape {text[index : index + 6]!r}"
                ) from None
            index += 6
            continue
        out.append(_ESCAPES.get(code, code))
        index += 2
    return "".join(out)
