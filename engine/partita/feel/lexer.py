"""FEEL tokens. Names may contain spaces only as the built-in multi-word function names
(`upper case`, `starts with`, ...), which are matched greedily."""

from __future__ import annotations

from dataclasses import dataclass

from partita.feel.errors import FeelSyntaxError

MULTI_WORD = (
    "is defined",
    "string length",
    "upper case",
    "lower case",
    "starts with",
    "ends with",
    "get value",
    "context put",
    "list contains",
    "index of",
    "distinct values",
    "date and time",
    "years and months duration",
    "day of week",
    "day of year",
    "week of year",
    "month of year",
    "last day of month",
    "time offset",
    "string join",
    "round half up",
    "round half down",
    "round up",
    "round down",
    "substring before",
    "substring after",
    "is empty",
    "get entries",
    "context merge",
)
KEYWORDS = {
    "if",
    "then",
    "else",
    "for",
    "in",
    "return",
    "some",
    "every",
    "satisfies",
    "and",
    "or",
    "between",
    "true",
    "false",
    "null",
}
_SYMBOLS = (
    "<=",
    ">=",
    "!=",
    "**",
    "..",
    "=",
    "<",
    ">",
    "+",
    "-",
    "*",
    "/",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ".",
    ":",
)
_LONGEST_MULTI_WORD = max(len(m) for m in MULTI_WORD)
_DIGITS = frozenset("0123456789")
"""Only ASCII digits make numbers: `str.isdigit` also accepts e.g. `²`, which is no number."""


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # number, string, temporal, name, keyword, symbol, end
    value: str
    position: int


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in _DIGITS or (ch == "." and i + 1 < n and text[i + 1] in _DIGITS):
            i = _number(text, i, tokens)
        elif ch == '"':
            i = _string(text, i, tokens)
        elif ch == "@" and i + 1 < n and text[i + 1] == '"':  # a temporal literal: @"P1D"
            i = _string(text, i + 1, tokens)
            tokens[-1] = Token("temporal", tokens[-1].value, tokens[-1].position - 1)
        elif ch.isalpha() or ch in "_?$":
            i = _word(text, i, tokens)
        elif ch == "`":  # backtick-quoted names
            end = text.find("`", i + 1)
            if end < 0:
                raise FeelSyntaxError("unterminated `name`", text, i)
            tokens.append(Token("name", text[i + 1 : end], i))
            i = end + 1
        else:
            symbol = next((s for s in _SYMBOLS if text.startswith(s, i)), None)
            if symbol is None:
                raise FeelSyntaxError(f"unexpected character {ch!r}", text, i)
            tokens.append(Token("symbol", symbol, i))
            i += len(symbol)
    tokens.append(Token("end", "", n))
    return tokens


def _number(text: str, start: int, tokens: list[Token]) -> int:
    i, n = start, len(text)
    while i < n and (text[i] in _DIGITS or text[i] == "."):
        if text[i] == "." and (i + 1 >= n or text[i + 1] not in _DIGITS):
            break  # `1..3` is a range, not a number
        i += 1
    tokens.append(Token("number", text[start:i], start))
    return i


def _string(text: str, start: int, tokens: list[Token]) -> int:
    i, n, out = start + 1, len(text), []
    while i < n and text[i] != '"':
        if text[i] == "\\" and i + 1 < n:
            escaped = text[i + 1]
            out.append({"n": "\n", "t": "\t", "r": "\r"}.get(escaped, escaped))
            i += 2
            continue
        out.append(text[i])
        i += 1
    if i >= n:
        raise FeelSyntaxError("unterminated string", text, start)
    tokens.append(Token("string", "".join(out), start))
    return i + 1


def _word(text: str, start: int, tokens: list[Token]) -> int:
    lower = text[start : start + _LONGEST_MULTI_WORD].lower()  # not the whole rest: quadratic
    multi = next(
        (m for m in MULTI_WORD if lower.startswith(m) and not _name_char(text, start + len(m))),
        None,
    )
    if multi is not None:
        tokens.append(Token("name", multi, start))
        return start + len(multi)
    i = start
    while i < len(text) and _name_char(text, i):
        i += 1
    word = text[start:i]
    tokens.append(Token("keyword" if word in KEYWORDS else "name", word, start))
    return i


def _name_char(text: str, i: int) -> bool:
    return i < len(text) and (text[i].isalnum() or text[i] in "_?$")
