"""FEEL, the expression language of Zeebe processes (tiers 1 and 2 of the FEEL scope used by
real processes: see ../shared/REFERENCES.md).

Zeebe's convention: text with a leading `=` is an expression, anything else a static value.
`compile_expression` parses once; `Expression.evaluate(variables)` is cheap and safe to call
many times. Results are JSON values. Errors say what and where (`FeelError.position`).
Compiling and evaluating raise nothing but FeelError, whatever the text and the variables.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from partita.feel.errors import FeelError, FeelEvaluationError, FeelSyntaxError
from partita.feel.evaluator import Evaluator, Scope
from partita.feel.parser import Node, parse
from partita.feel.values import ResultTooLargeError, from_json, to_json, type_name

__all__ = [
    "Expression",
    "FeelError",
    "FeelEvaluationError",
    "FeelSyntaxError",
    "compile_expression",
    "evaluate",
]


@dataclass(frozen=True, slots=True)
class Expression:
    """A compiled `=expression`, or a static value (text without the leading `=`)."""

    text: str
    ast: Node | None

    @property
    def is_static(self) -> bool:
        return self.ast is None

    def evaluate(self, variables: Mapping[str, Any] | None = None) -> Any:
        """The JSON result for these variables (a static expression returns its text)."""
        if self.ast is None:
            return self.text
        try:
            scope = Scope(from_json(dict(variables or {})))
            return to_json(Evaluator(self.text).eval(self.ast, scope))
        except RecursionError:  # a long chain like 1+1+...+1 parses flat but evaluates deep
            raise FeelEvaluationError("the expression is nested too deeply", self.text) from None
        except ResultTooLargeError as error:
            raise FeelEvaluationError(str(error), self.text) from None

    def evaluate_as(self, expected: str, variables: Mapping[str, Any] | None = None) -> Any:
        """Evaluate and require a result of type `expected` ("boolean", "string", "number",
        "list", "context"); FeelEvaluationError naming the actual type otherwise."""
        result = self.evaluate(variables)
        actual = type_name(from_json(result))
        if actual != expected:
            raise FeelEvaluationError(
                f"expected the result to be a {expected} but it is {actual} ({result!r})",
                self.text,
            )
        return result


@lru_cache(maxsize=4096)
def compile_expression(text: str) -> Expression:
    """Parse once (cached by text). FeelSyntaxError points at the position of the problem."""
    stripped = text.strip()
    if not stripped.startswith("="):
        return Expression(text, None)
    body = stripped[1:]
    try:
        return Expression(body, parse(body))
    except RecursionError:
        raise FeelSyntaxError("the expression is nested too deeply", body) from None


def evaluate(text: str, variables: Mapping[str, Any] | None = None) -> Any:
    return compile_expression(text).evaluate(variables)
