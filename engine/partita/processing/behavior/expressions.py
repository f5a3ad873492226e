"""Expressions that name something: a message name, a correlation key, a timer value, a called
process. Static text is used as it is; `=...` is FEEL and must give a string or a number."""

from __future__ import annotations

from typing import Any

from partita.feel import FeelError, compile_expression


class ExpressionError(Exception):
    """An expression failed; `reason` names the element and the problem."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def text_of(expression: str, variables: dict[str, Any], what: str) -> str:
    """The text `expression` gives with `variables`; ExpressionError when it fails."""
    if not expression.startswith("="):
        return expression
    try:
        result = compile_expression(expression).evaluate(variables)
    except FeelError as error:
        raise ExpressionError(f"{what} '{expression}': {error.reason}") from None
    if isinstance(result, bool) or not isinstance(result, str | int | float):
        found = "null" if result is None else type(result).__name__
        raise ExpressionError(
            f"{what} '{expression}' must be a string or a number, but it is {found}"
        )
    return str(int(result)) if isinstance(result, float) and result.is_integer() else str(result)
