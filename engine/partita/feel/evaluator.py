"""Evaluation of the FEEL AST with FEEL's null semantics: a missing name or path is null; an
operator on incompatible types gives null; `and`/`or` use three-valued logic. Arithmetic that
has no finite result (overflow, 0 ** -1) is null as well.

Evaluation is bounded so that no expression can stall a partition: at most MAX_STEPS node
evaluations (loops and ranges included), ranges of at most MAX_RANGE numbers and strings of
at most MAX_STRING_LENGTH characters; beyond that a FeelEvaluationError names the limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from partita.feel import temporal
from partita.feel.builtins import FUNCTIONS, METERED
from partita.feel.errors import FeelBuiltinError, FeelEvaluationError
from partita.feel.parser import Node
from partita.feel.values import MAX_STRING_LENGTH, ResultTooLargeError, is_number

MAX_STEPS = 1_000_000
MAX_RANGE = 100_000
__all__ = ["MAX_RANGE", "MAX_STEPS", "MAX_STRING_LENGTH", "Evaluator", "Scope"]

_VARARG_LISTS = {"sum", "min", "max", "mean", "product", "all", "any"}


class Scope:
    """Variables visible to an expression; inner scopes (filters, for, some) shadow outer."""

    __slots__ = ("parent", "values")

    def __init__(self, values: Mapping[str, Any], parent: Scope | None = None) -> None:
        self.values = values
        self.parent = parent

    def lookup(self, name: str) -> tuple[bool, Any]:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.values:
                return True, scope.values[name]
            scope = scope.parent
        return False, None


class Evaluator:
    def __init__(self, text: str) -> None:
        self.text = text
        self.steps = 0

    def charge(self, steps: int, node: Node) -> None:
        """Count `steps` of work; FeelEvaluationError once MAX_STEPS are spent."""
        self.steps += steps
        if self.steps > MAX_STEPS:
            raise self.error(f"the evaluation takes more than {MAX_STEPS} steps", node)

    def error(self, message: str, node: Node) -> FeelEvaluationError:
        return FeelEvaluationError(message, self.text, node[1])

    def eval(self, node: Node, scope: Scope) -> Any:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise self.error(f"the evaluation takes more than {MAX_STEPS} steps", node)
        kind = node[0]
        method = getattr(self, "_" + kind.replace("-", "_"))
        return method(node, scope)

    def _literal(self, node: Node, scope: Scope) -> Any:
        return node[2]

    def _name(self, node: Node, scope: Scope) -> Any:
        return scope.lookup(node[2])[1]

    def _path(self, node: Node, scope: Scope) -> Any:
        base = self.eval(node[2], scope)
        return _member(base, node[3])

    def _select(self, node: Node, scope: Scope) -> Any:
        base = self.eval(node[2], scope)
        if base is None:
            return None
        items = base if isinstance(base, list) else [base]
        selector = node[3]
        index = self.eval(selector, scope)
        if is_number(index) and selector[0] not in ("compare", "and", "or", "between", "in"):
            if abs(index) >= len(items) + 1:  # before int(): 1E+999999 has a million digits
                return None
            position = int(index)
            if position == 0:
                return None
            return items[position - 1] if position > 0 else items[position]
        kept = []
        for item in items:
            inner = dict(item) if isinstance(item, dict) else {}
            inner["item"] = item
            if self.eval(selector, Scope(inner, scope)) is True:
                kept.append(item)
        return kept

    def _call(self, node: Node, scope: Scope) -> Any:
        name, arguments = node[2], node[3]
        if name == "is defined":
            if len(arguments) != 1:
                raise self.error("is defined() takes one argument", node)
            return self._defined(arguments[0], scope)
        entry = FUNCTIONS.get(name)
        if entry is None:
            raise self.error(f"unknown function '{name}'", node)
        function, minimum, maximum = entry
        values = [self.eval(argument, scope) for argument in arguments]
        if len(values) < minimum or (maximum >= 0 and len(values) > maximum):
            expected = str(minimum) if minimum == maximum else f"{minimum} or more"
            raise self.error(f"{name}() takes {expected} arguments, got {len(values)}", node)
        if name in _VARARG_LISTS and len(values) > 1:
            values = [values]
        try:
            if name in METERED:
                return function(lambda steps: self.charge(steps, node), *values)
            result = function(*values)
            if isinstance(result, list):  # a list built at once is work in proportion
                self.charge(len(result), node)
            return result
        except ArithmeticError:  # e.g. sum() overflowing: no number, so null
            return None
        except (ResultTooLargeError, FeelBuiltinError) as error:
            raise self.error(str(error), node) from None

    def _defined(self, node: Node, scope: Scope) -> bool:
        if node[0] == "name":
            return scope.lookup(node[2])[0]
        if node[0] == "path":
            base = self.eval(node[2], scope)
            return isinstance(base, dict) and node[3] in base
        return self.eval(node, scope) is not None

    def _list(self, node: Node, scope: Scope) -> list[Any]:
        return [self.eval(item, scope) for item in node[2]]

    def _context(self, node: Node, scope: Scope) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in node[2]:
            result[key] = self.eval(value, Scope(result, scope))  # later entries see earlier
        return result

    def _negate(self, node: Node, scope: Scope) -> Any:
        value = self.eval(node[2], scope)
        if is_number(value):
            return -value
        if temporal.is_temporal(value):
            return temporal.arith("-", temporal.arith("-", value, value), value)
        return None

    def _arith(self, node: Node, scope: Scope) -> Any:
        op = node[2]
        left, right = self.eval(node[3], scope), self.eval(node[4], scope)
        if op == "+" and isinstance(left, str) and isinstance(right, str):
            if len(left) + len(right) > MAX_STRING_LENGTH:
                raise self.error(f"a string longer than {MAX_STRING_LENGTH} characters", node)
            return left + right
        if not (is_number(left) and is_number(right)):
            if temporal.is_temporal(left) or temporal.is_temporal(right):
                return temporal.arith(op, left, right)
            return None
        try:
            if op == "+":
                result = left + right
            elif op == "-":
                result = left - right
            elif op == "*":
                result = left * right
            elif op == "/":
                result = None if right == 0 else left / right
            else:
                result = left**right
        except ArithmeticError:  # decimal's Overflow, InvalidOperation, DivisionByZero, ...
            return None
        return result if result is None or result.is_finite() else None

    def _compare(self, node: Node, scope: Scope) -> Any:
        op = node[2]
        left, right = self.eval(node[3], scope), self.eval(node[4], scope)
        if op == "=":
            return _equal(left, right)
        if op == "!=":
            equal = _equal(left, right)
            return None if equal is None else not equal
        if not _comparable(left, right):
            return None
        if temporal.is_temporal(left):
            order = temporal.compare(left, right)
            if order is None:
                return None
            return {"<": order < 0, "<=": order <= 0, ">": order > 0}.get(op, order >= 0)
        if op == "<":
            return left < right
        if op == "<=":
            return left <= right
        if op == ">":
            return left > right
        return left >= right

    def _between(self, node: Node, scope: Scope) -> Any:
        value, low, high = (self.eval(n, scope) for n in node[2:5])
        if not (_comparable(value, low) and _comparable(value, high)):
            return None
        if temporal.is_temporal(value):
            above, below = temporal.compare(value, low), temporal.compare(value, high)
            return None if above is None or below is None else above >= 0 and below <= 0
        return low <= value <= high

    def _in(self, node: Node, scope: Scope) -> Any:
        value, container = self.eval(node[2], scope), self.eval(node[3], scope)
        if isinstance(container, list):
            return any(_equal(value, item) for item in container)
        return _equal(value, container)

    def _and(self, node: Node, scope: Scope) -> Any:
        left = self.eval(node[2], scope)
        if left is False:
            return False
        right = self.eval(node[3], scope)
        if right is False:
            return False
        if left is True and right is True:
            return True
        return None

    def _or(self, node: Node, scope: Scope) -> Any:
        left = self.eval(node[2], scope)
        if left is True:
            return True
        right = self.eval(node[3], scope)
        if right is True:
            return True
        if left is False and right is False:
            return False
        return None

    def _if(self, node: Node, scope: Scope) -> Any:
        condition = self.eval(node[2], scope)
        return self.eval(node[3] if condition is True else node[4], scope)

    def _range(self, node: Node, scope: Scope) -> Any:
        start, end = self.eval(node[2], scope), self.eval(node[3], scope)
        if not (is_number(start) and is_number(end)):
            return None
        try:
            span = abs(end - start)
        except ArithmeticError:  # e.g. -1E+999999..1E+999999 overflows
            span = None
        if span is None or span >= MAX_RANGE:
            raise self.error(f"a range of more than {MAX_RANGE} numbers", node)
        step = 1 if end >= start else -1
        self.charge(int(span), node)
        return [Decimal(i) for i in range(int(start), int(end) + step, step)]

    def _for(self, node: Node, scope: Scope) -> Any:
        iterators, body = node[2], node[3]
        results: list[Any] = []
        partial: list[Any] = []
        uses_partial = _mentions(body, "partial")  # copying it every round is quadratic

        def loop(index: int, current: Scope) -> None:
            if index == len(iterators):
                if uses_partial:
                    self.charge(len(partial), node)
                    current = Scope({"partial": list(partial)}, current)
                value = self.eval(body, current)
                results.append(value)
                partial.append(value)
                return
            name, source = iterators[index]
            items = self.eval(source, current)
            if not isinstance(items, list):
                return
            for item in items:
                loop(index + 1, Scope({name: item}, current))

        loop(0, scope)
        return results

    def _some(self, node: Node, scope: Scope) -> Any:
        return self._quantified(node, scope, any)

    def _every(self, node: Node, scope: Scope) -> Any:
        return self._quantified(node, scope, all)

    def _quantified(self, node: Node, scope: Scope, combine: Any) -> Any:
        name, source, condition = node[2], node[3], node[4]
        items = self.eval(source, scope)
        if not isinstance(items, list):
            return None
        return combine(self.eval(condition, Scope({name: item}, scope)) is True for item in items)


def _mentions(node: Any, name: str) -> bool:
    """Whether the AST `node` refers to the variable `name`."""
    if isinstance(node, tuple):
        if len(node) == 3 and node[0] == "name" and node[2] == name:
            return True
        return any(_mentions(child, name) for child in node)
    return False


def _member(base: Any, name: str) -> Any:
    if isinstance(base, dict):
        return base.get(name)
    if isinstance(base, list):
        return [_member(item, name) for item in base]
    if temporal.is_temporal(base):
        return temporal.member(base, name)
    return None


def _equal(left: Any, right: Any) -> bool | None:
    if left is None or right is None:
        return left is None and right is None
    if isinstance(left, bool) != isinstance(right, bool):
        return None
    if is_number(left) != is_number(right):
        return None
    if temporal.is_temporal(left) or temporal.is_temporal(right):
        order = temporal.compare(left, right)
        return None if order is None else order == 0
    return bool(left == right)


def _comparable(left: Any, right: Any) -> bool:
    if is_number(left) and is_number(right):
        return True
    if temporal.is_temporal(left):
        return temporal.comparable(left, right)
    return isinstance(left, str) and isinstance(right, str)
