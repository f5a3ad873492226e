"""FEEL errors: each points at the position in the expression."""

from __future__ import annotations

from partita.errors import PartitaError


class FeelError(PartitaError):
    """Base of FEEL errors. `expression` and `position` (0-based column) say where."""

    def __init__(self, message: str, expression: str, position: int | None = None) -> None:
        self.reason = message
        self.expression = expression
        self.position = position
        where = f" at position {position + 1}" if position is not None else ""
        pointer = ""
        if position is not None:
            pointer = f"\n  {expression}\n  {' ' * position}^"
        super().__init__(f"FEEL: {message}{where} in '{expression}'{pointer}")


class FeelSyntaxError(FeelError):
    """The expression does not parse."""


class FeelEvaluationError(FeelError):
    """The expression parsed but cannot be evaluated (e.g. a function called with the wrong
    arguments, or a result of the wrong type where one is required)."""


class FeelBuiltinError(Exception):
    """A built-in function refused its arguments for a reason worth more than a null (a limit,
    an unsupported pattern). The message names the function; the evaluator turns it into a
    FeelEvaluationError pointing at the call."""
