"""VARIABLE_DOCUMENT UPDATE: set variables on a scope from outside (a client, an operator).

LOCAL sets every variable on the given scope; PROPAGATE (Zeebe's default) updates each where
it is already defined, nearest scope first, or creates it on the process instance.
"""

from __future__ import annotations

from partita.processing.behavior.variables import (
    propagate_variables,
    set_variable,
    variables_document,
)
from partita.processing.context import ProcessingContext, RejectionError
from partita.processing.dispatch import Handlers
from partita.processing.instance import state as instance_state
from partita.protocol.enums import RejectionType, VariableDocumentUpdateSemantic
from partita.protocol.intents import VariableDocumentIntent
from partita.protocol.records import Record
from partita.protocol.values import VariableDocumentValue

handlers = Handlers()


@handlers.processor(VariableDocumentIntent.UPDATE)
def update(command: Record, ctx: ProcessingContext) -> None:
    value = command.value
    assert isinstance(value, VariableDocumentValue)
    scope = instance_state.instance(ctx.state, value.scope_key)
    if scope is None:
        raise RejectionError(
            RejectionType.NOT_FOUND, f"no active element instance with key {value.scope_key}"
        )
    variables = variables_document(value.variables)
    element = instance_state.value_of(scope)
    if value.update_semantics is VariableDocumentUpdateSemantic.LOCAL:
        for name, result in variables.items():
            set_variable(ctx, value.scope_key, name, result, element)
    else:
        propagate_variables(ctx, value.scope_key, variables, element)
    ctx.append_event(VariableDocumentIntent.UPDATED, value, ctx.keys.next_key(), respond=True)
