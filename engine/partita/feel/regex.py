"""FEEL's regular-expression functions, `matches()`, `replace()` and `split()`, on RE2.

RE2 matches in time linear in the text whatever the pattern, so a catastrophic pattern such as
`(a+)+$` cannot stall a partition: it simply answers. What RE2 cannot do in linear time it does
not offer (back-references, look-around); such a pattern is a FeelBuiltinError naming the
function, where Python's `re` would have backtracked for ever. Patterns are Python/RE2 syntax
(`\\Z` is read as the end of the text, as in Python), `\\d`, `\\w`, `\\s` and `\\b` are ASCII, as
in Java's default (and so Zeebe's). A pattern that is no regular expression at all gives null,
like any argument of the wrong kind.

Work is bounded twice. One call may do at most MAX_WORK units (bytes of text times instructions
of the compiled pattern: what RE2 costs when its DFA runs out of memory and it simulates the
automaton instead); beyond that it is a FeelBuiltinError naming the function and the limit.
And every call charges the evaluation's step meter (a step per WORK_PER_STEP units of work, and
STEPS_PER_MATCH per match), so a loop of calls runs into the evaluation's own step limit.

Flags are XPath's (`fn:matches`): `i` case-insensitive, `s` dot matches newlines, `m` `^`/`$`
match at line ends, `x` whitespace in the pattern is ignored (outside character classes),
`q` the pattern is a literal string (only `i` still applies).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any, NamedTuple

import re2  # type: ignore[import-untyped]  # google-re2 ships no type information

from partita.feel.errors import FeelBuiltinError
from partita.feel.values import MAX_STRING_LENGTH

Meter = Callable[[int], None]
"""Charges evaluation steps; raises the evaluation's error once its step budget is spent."""

MAX_WORK = 50_000_000
"""Most work one call may do: bytes of text x instructions of the compiled pattern. At about
5 ns a unit (the automaton simulated, the slowest way RE2 matches), well under a second."""
WORK_PER_STEP = 100
"""Units of work charged as one evaluation step (a step of the evaluator costs about 1 us)."""
STEPS_PER_MATCH = 3
"""Evaluation steps charged for each match replace() and split() step through (about 3 us
each in RE2's Python module)."""
MAX_PROGRAM_MEMORY = 2 * 1024 * 1024
"""RE2's memory per compiled pattern (program and DFA cache); a larger pattern is refused.
RE2's module keeps 128 compiled patterns, so at most 256 MiB in all."""

FLAGS = "smixq"

_SHOWN = 80
"""Characters of a pattern or replacement quoted in an error message."""


class _Pattern(NamedTuple):
    regexp: Any  # re2._Regexp: google-re2 ships no type information
    size: int  # instructions of the compiled program


def matches(meter: Meter, text: Any, pattern: Any, flags: Any = None) -> bool | None:
    """Whether `pattern` matches somewhere in `text`; null for arguments of the wrong kind or a
    pattern that does not parse. Never takes more than MAX_WORK units of work."""
    if not _strings(text, pattern) or not _flags_type(flags):
        return None
    compiled = _prepare(meter, "matches", text, pattern, flags)
    if compiled is None:
        return None
    return compiled.regexp.search(text) is not None


def replace(
    meter: Meter, text: Any, pattern: Any, replacement: Any, flags: Any = None
) -> str | None:
    """`text` with every match of `pattern` replaced. In `replacement`, `$N` is the text of
    group N (the empty string if there is no such group), `\\$` a dollar and `\\\\` a
    backslash; any other `$` or `\\` is a FeelBuiltinError. A result longer than
    MAX_STRING_LENGTH characters is a FeelBuiltinError, raised before it is built."""
    if not _strings(text, pattern, replacement) or not _flags_type(flags):
        return None
    compiled = _prepare(meter, "replace", text, pattern, flags)
    if compiled is None:
        return None
    template = _template(replacement, compiled.regexp.groups)
    pieces: list[str] = []
    length = 0
    end = 0
    for match in compiled.regexp.finditer(text):
        meter(STEPS_PER_MATCH)
        substituted = [
            part if isinstance(part, str) else match.group(part) or "" for part in template
        ]
        length += match.start() - end + sum(len(piece) for piece in substituted)
        if length > MAX_STRING_LENGTH:
            break
        pieces.append(text[end : match.start()])
        pieces.extend(substituted)
        end = match.end()
    length += len(text) - end
    if length > MAX_STRING_LENGTH:
        raise FeelBuiltinError(
            f"replace(): the result would be longer than {MAX_STRING_LENGTH} characters"
        )
    pieces.append(text[end:])
    return "".join(pieces)


def split(meter: Meter, text: Any, delimiter: Any) -> list[str] | None:
    """The parts of `text` between the matches of the pattern `delimiter`, empty parts kept
    (`split("a;;b", ";")` is `["a", "", "b"]`); an empty match at the very start splits off
    nothing, as in Java's `String.split`."""
    if not _strings(text, delimiter):
        return None
    compiled = _prepare(meter, "split", text, delimiter, None)
    if compiled is None:
        return None
    parts: list[str] = []
    end = 0
    for match in compiled.regexp.finditer(text):
        meter(STEPS_PER_MATCH)
        if match.end() == 0:
            continue
        parts.append(text[end : match.start()])
        end = match.end()
    parts.append(text[end:])
    return parts


def _strings(*values: Any) -> bool:
    return all(isinstance(value, str) for value in values)


def _flags_type(flags: Any) -> bool:
    return flags is None or isinstance(flags, str)


def _prepare(
    meter: Meter, function: str, text: str, pattern: str, flags: str | None
) -> _Pattern | None:
    """The compiled pattern, its work on `text` checked against MAX_WORK and charged to
    `meter`; None if the pattern does not parse (as RE2 or as Python's `re`)."""
    size = len(_encoded(function, "text", text))
    compiled = _compile(function, pattern, flags or "")
    if compiled is None:
        return None
    work = (size + 1) * compiled.size
    if work > MAX_WORK:
        raise FeelBuiltinError(
            f"{function}(): matching a pattern of {compiled.size} instructions against a text"
            f" of {size} bytes is {work} units of work, over the limit of {MAX_WORK}"
        )
    meter(1 + work // WORK_PER_STEP)
    return compiled


def _compile(function: str, pattern: str, flags: str) -> _Pattern | None:
    for flag in flags:
        if flag not in FLAGS:
            raise FeelBuiltinError(
                f"{function}(): unknown flag {flag!r} in {flags!r} (the flags are"
                f" {', '.join(FLAGS)})"
            )
    _encoded(function, "pattern", pattern)
    try:
        return _compiled(pattern, "".join(sorted(set(flags))))
    except re2.error as error:
        reason = error.args[0].decode(errors="replace") if error.args else "refused"
    if "q" in flags:  # a literal: nothing to parse, so only its size can be refused
        supported_by_python = True
    else:
        try:
            re.compile(pattern, _python_flags(flags))
            supported_by_python = True
        except (re.error, OverflowError, RecursionError):
            supported_by_python = False
    if not supported_by_python:
        return None  # no regular expression at all: a wrong argument, so null
    shown = pattern if len(pattern) <= _SHOWN else pattern[:_SHOWN] + "..."
    if "too large" in reason:
        reason = f"{reason} (the limit is {MAX_PROGRAM_MEMORY // 1024} KiB of compiled program)"
    raise FeelBuiltinError(
        f"{function}(): the pattern {shown!r} is not supported: {reason}. Patterns run in"
        " linear time: no back-references, no look-around, repetition counts up to 1000"
    )


def _python_flags(flags: str) -> re.RegexFlag:
    """Python's flags for the XPath flags i, s, m and x."""
    mapping = {"i": re.IGNORECASE, "s": re.DOTALL, "m": re.MULTILINE, "x": re.VERBOSE}
    result = re.RegexFlag(0)
    for flag in flags:
        result |= mapping.get(flag, re.RegexFlag(0))
    return result


@lru_cache(maxsize=128)
def _compiled(pattern: str, flags: str) -> _Pattern:
    """RE2's compiled form of `pattern` under XPath `flags`; re2.error if RE2 refuses it."""
    options = re2.Options()
    options.log_errors = False
    options.max_mem = MAX_PROGRAM_MEMORY
    if "q" in flags:
        options.literal = True
        options.case_sensitive = "i" not in flags
        source = pattern
    else:
        source = _source(pattern, flags)
    regexp = re2.compile(source, options)
    return _Pattern(regexp, regexp.programsize)


def _source(pattern: str, flags: str) -> str:
    """The RE2 source of a pattern under the flags i, s, m and x; Python's `\\Z` becomes
    RE2's `\\z`."""
    if "x" in flags or "\\Z" in pattern:
        pattern = _rewrite(pattern, strip_whitespace="x" in flags)
    inline = "".join(flag for flag in "ism" if flag in flags)
    return f"(?{inline}){pattern}" if inline else pattern


def _rewrite(pattern: str, strip_whitespace: bool) -> str:
    """`\\Z` as `\\z`, and whitespace outside character classes dropped if asked; escapes and
    classes (with `]` first in them, and `[:name:]`) are stepped over intact."""
    out: list[str] = []
    index, count, in_class = 0, len(pattern), False
    while index < count:
        char = pattern[index]
        if char == "\\" and index + 1 < count:
            following = pattern[index + 1]
            out.append("\\z" if following == "Z" and not in_class else char + following)
            index += 2
            continue
        if in_class:
            if pattern.startswith("[:", index):
                close = pattern.find(":]", index + 2)
                if close != -1:
                    out.append(pattern[index : close + 2])
                    index = close + 2
                    continue
            in_class = char != "]"
        elif char == "[":
            in_class = True
            opening = 2 if pattern.startswith("[^", index) else 1
            if pattern.startswith("]", index + opening):
                opening += 1
            out.append(pattern[index : index + opening])
            index += opening
            continue
        elif strip_whitespace and char in " \t\n\r":
            index += 1
            continue
        out.append(char)
        index += 1
    return "".join(out)


def _template(replacement: str, groups: int) -> list[str | int]:
    """`replacement` as literal pieces and group numbers. A `$` takes as many digits as still
    name a group (the first digit always counts)."""
    parts: list[str | int] = []
    literal: list[str] = []
    index, count = 0, len(replacement)
    while index < count:
        char = replacement[index]
        if char == "\\":
            if index + 1 < count and replacement[index + 1] in "\\$":
                literal.append(replacement[index + 1])
                index += 2
                continue
            raise _bad_replacement(replacement, index, "a '\\' not before '\\' or '$'")
        if char == "$":
            index += 1
            if (
                index >= count
                or not replacement[index].isascii()
                or not replacement[index].isdigit()
            ):
                raise _bad_replacement(replacement, index - 1, "a '$' not before a group number")
            number = int(replacement[index])
            index += 1
            while index < count and replacement[index].isascii() and replacement[index].isdigit():
                longer = number * 10 + int(replacement[index])
                if longer > groups:
                    break
                number = longer
                index += 1
            if literal:
                parts.append("".join(literal))
                literal = []
            parts.append(number if number <= groups else "")
            continue
        literal.append(char)
        index += 1
    if literal:
        parts.append("".join(literal))
    return parts


def _bad_replacement(replacement: str, index: int, what: str) -> FeelBuiltinError:
    shown = replacement if len(replacement) <= _SHOWN else replacement[:_SHOWN] + "..."
    return FeelBuiltinError(
        f"replace(): the replacement {shown!r} has {what} at position {index + 1}"
        " (write \\$ for a dollar, \\\\ for a backslash)"
    )


def _encoded(function: str, what: str, value: str) -> bytes:
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise FeelBuiltinError(
            f"{function}(): the {what} holds a lone surrogate at position {error.start + 1}"
        ) from None
