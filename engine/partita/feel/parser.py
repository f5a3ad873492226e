"""FEEL (tiers 1 and 2) -> a small AST of tuples, by recursive descent.

Precedence, loosest first: if/for/some/every, `or`, `and`, comparison (`= != < <= > >=`,
`between`, `in`), `+ -`, `* /`, `**`, unary `-`, postfix (`.name`, `[filter or index]`,
`(arguments)`), primaries (literals, names, `( )`, lists, contexts).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from partita.feel import temporal
from partita.feel.errors import FeelSyntaxError
from partita.feel.lexer import Token, tokenize

Node = tuple[Any, ...]


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0

    # -- helpers ------------------------------------------------------------------------------

    @property
    def token(self) -> Token:
        return self.tokens[self.i]

    def at(self, kind: str, value: str | None = None) -> bool:
        token = self.token
        return token.kind == kind and (value is None or token.value == value)

    def take(self) -> Token:
        token = self.token
        self.i += 1
        return token

    def expect(self, kind: str, value: str) -> Token:
        if not self.at(kind, value):
            found = self.token.value or "the end"
            raise FeelSyntaxError(
                f"expected '{value}' but found '{found}'", self.text, self.token.position
            )
        return self.take()

    # -- grammar ------------------------------------------------------------------------------

    def parse(self) -> Node:
        if self.at("end"):
            raise FeelSyntaxError("empty expression", self.text, 0)
        node = self.expression()
        if not self.at("end"):
            raise FeelSyntaxError(
                f"unexpected '{self.token.value}'", self.text, self.token.position
            )
        return node

    def expression(self) -> Node:
        if self.at("keyword", "if"):
            position = self.take().position
            condition = self.expression()
            self.expect("keyword", "then")
            then = self.expression()
            self.expect("keyword", "else")
            return ("if", position, condition, then, self.expression())
        if self.at("keyword", "for"):
            position = self.take().position
            iterators = [self.iterator()]
            while self.at("symbol", ","):
                self.take()
                iterators.append(self.iterator())
            self.expect("keyword", "return")
            return ("for", position, tuple(iterators), self.expression())
        if self.at("keyword", "some") or self.at("keyword", "every"):
            token = self.take()
            name, source = self.iterator()
            self.expect("keyword", "satisfies")
            return (token.value, token.position, name, source, self.expression())
        return self.disjunction()

    def iterator(self) -> tuple[str, Node]:
        if not self.at("name"):
            raise FeelSyntaxError("expected a variable name", self.text, self.token.position)
        name = self.take().value
        self.expect("keyword", "in")
        start = self.disjunction()
        if self.at("symbol", ".."):
            position = self.take().position
            return name, ("range", position, start, self.disjunction())
        return name, start

    def disjunction(self) -> Node:
        node = self.conjunction()
        while self.at("keyword", "or"):
            position = self.take().position
            node = ("or", position, node, self.conjunction())
        return node

    def conjunction(self) -> Node:
        node = self.comparison()
        while self.at("keyword", "and"):
            position = self.take().position
            node = ("and", position, node, self.comparison())
        return node

    def comparison(self) -> Node:
        node = self.additive()
        if self.token.kind == "symbol" and self.token.value in ("=", "!=", "<", "<=", ">", ">="):
            token = self.take()
            return ("compare", token.position, token.value, node, self.additive())
        if self.at("keyword", "between"):
            position = self.take().position
            low = self.additive()
            self.expect("keyword", "and")
            return ("between", position, node, low, self.additive())
        if self.at("keyword", "in"):
            position = self.take().position
            return ("in", position, node, self.additive())
        return node

    def additive(self) -> Node:
        node = self.multiplicative()
        while self.token.kind == "symbol" and self.token.value in ("+", "-"):
            token = self.take()
            node = ("arith", token.position, token.value, node, self.multiplicative())
        return node

    def multiplicative(self) -> Node:
        node = self.power()
        while self.token.kind == "symbol" and self.token.value in ("*", "/"):
            token = self.take()
            node = ("arith", token.position, token.value, node, self.power())
        return node

    def power(self) -> Node:
        node = self.unary()
        if self.at("symbol", "**"):
            token = self.take()
            return ("arith", token.position, "**", node, self.power())
        return node

    def unary(self) -> Node:
        if self.at("symbol", "-"):
            position = self.take().position
            return ("negate", position, self.unary())
        return self.postfix()

    def postfix(self) -> Node:
        node = self.primary()
        while True:
            if self.at("symbol", "."):
                position = self.take().position
                if not self.at("name") and not self.at("keyword"):
                    raise FeelSyntaxError(
                        "expected a name after '.'", self.text, self.token.position
                    )
                node = ("path", position, node, self.take().value)
            elif self.at("symbol", "["):
                position = self.take().position
                selector = self.expression()
                self.expect("symbol", "]")
                node = ("select", position, node, selector)
            elif self.at("symbol", "(") and node[0] == "name":
                position = self.take().position
                arguments = []
                if not self.at("symbol", ")"):
                    arguments.append(self.expression())
                    while self.at("symbol", ","):
                        self.take()
                        arguments.append(self.expression())
                self.expect("symbol", ")")
                node = ("call", position, node[2], tuple(arguments))
            else:
                return node

    def primary(self) -> Node:
        token = self.token
        if token.kind == "number":
            self.take()
            return ("literal", token.position, Decimal(token.value))
        if token.kind == "string":
            self.take()
            return ("literal", token.position, token.value)
        if token.kind == "temporal":
            self.take()
            try:
                return ("literal", token.position, temporal.parse_literal(token.value))
            except (ValueError, OverflowError) as error:
                raise FeelSyntaxError(str(error), self.text, token.position) from None
        if token.kind == "keyword" and token.value in ("true", "false", "null"):
            self.take()
            return (
                "literal",
                token.position,
                {"true": True, "false": False, "null": None}[token.value],
            )
        if token.kind == "name":
            self.take()
            return ("name", token.position, token.value)
        if self.at("symbol", "("):
            self.take()
            node = self.expression()
            self.expect("symbol", ")")
            return node
        if self.at("symbol", "["):
            self.take()
            items = []
            if not self.at("symbol", "]"):
                items.append(self.expression())
                while self.at("symbol", ","):
                    self.take()
                    items.append(self.expression())
            self.expect("symbol", "]")
            return ("list", token.position, tuple(items))
        if self.at("symbol", "{"):
            self.take()
            entries = []
            while not self.at("symbol", "}"):
                key_token = self.take()
                if key_token.kind not in ("name", "string", "keyword"):
                    raise FeelSyntaxError("expected a context key", self.text, key_token.position)
                self.expect("symbol", ":")
                entries.append((key_token.value, self.expression()))
                if not self.at("symbol", ","):
                    break
                self.take()
            self.expect("symbol", "}")
            return ("context", token.position, tuple(entries))
        found = token.value or "the end of the expression"
        raise FeelSyntaxError(f"unexpected '{found}'", self.text, token.position)


def parse(text: str) -> Node:
    """The AST of a FEEL expression (without Zeebe's leading '=')."""
    return _Parser(text).parse()
