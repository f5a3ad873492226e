"""Variables in state: column family `variable`, keyed by (scope key, name), holds each value
as JSON text. An element sees its own scope's variables first, then its flow scopes'."""

from __future__ import annotations

from typing import Any

from partita.processing.instance.state import scope_chain
from partita.protocol import json_text
from partita.state import ColumnFamilies
from partita.state.view import StateView

VARIABLES = ColumnFamilies.VARIABLE


def local_variables(db: StateView, scope_key: int) -> dict[str, Any]:
    return {
        name: json_text.parse(value)
        for (_, name), value in db.column(VARIABLES).items(VARIABLES.key.prefix(scope_key))
    }


def variable_json(db: StateView, scope_key: int, name: str) -> str | None:
    """The JSON text of one local variable, or None."""
    found: str | None = db.column(VARIABLES).get((scope_key, name))
    return found


def visible_variables_json(db: StateView, key: int) -> str:
    """`visible_variables` as a JSON object, built from the stored JSON texts unparsed."""
    merged: dict[str, str] = {}
    for scope in reversed(scope_chain(db, key)):
        for (_, name), text in db.column(VARIABLES).items(VARIABLES.key.prefix(scope)):
            merged[name] = text
    write = json_text.write
    return "{" + ",".join(f"{write(n)}:{t}" for n, t in merged.items()) + "}"


def visible_variables(db: StateView, key: int) -> dict[str, Any]:
    """The variables an element sees: its own scope first, then its flow scopes."""
    result: dict[str, Any] = {}
    for scope in reversed(scope_chain(db, key)):
        result.update(local_variables(db, scope))
    return result
