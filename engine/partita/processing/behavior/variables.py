"""Variables of element instances: a command's variables document, setting one (VARIABLE
CREATED / UPDATED, nothing when the value is unchanged), Zeebe's default merge (where a
variable is defined, nearest scope first, else on the process instance), and input and output
mappings (a failing one is an incident)."""

from __future__ import annotations

from typing import Any

from partita.feel import FeelError, compile_expression
from partita.processing.behavior.incidents import element_incident
from partita.processing.context import ProcessingContext, RejectionError
from partita.processing.instance.state import scope_chain
from partita.processing.variable.state import variable_json
from partita.protocol import json_text
from partita.protocol.enums import ErrorType, RejectionType
from partita.protocol.intents import VariableIntent
from partita.protocol.values import ProcessInstanceValue, VariableValue


def variables_document(text: str) -> dict[str, Any]:
    """The variables of a command's JSON object document ("" is `{}`); a RejectionError
    (INVALID_ARGUMENT) for anything else: not JSON, JSON Python reads but others do not
    (`NaN`, `Infinity`, lone surrogates), integers too long to write back, nesting too deep,
    or JSON that is not an object. Never raises anything else."""
    return json_document(text, "variables are")


def json_document(text: str, what: str) -> dict[str, Any]:
    """A command's JSON object document ("" is `{}`), refused as `variables_document` refuses
    variables; `what` names it with its verb ("variables are", "the job result is")."""
    try:
        document = json_text.parse(text or "{}")
    except (ValueError, RecursionError) as error:
        reason = "nested too deeply" if isinstance(error, RecursionError) else str(error)
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT, f"{what} not valid JSON: {reason}"
        ) from None
    if not isinstance(document, dict):
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT,
            f"{what.rsplit(' ', 1)[0]} must be a JSON object, not {type(document).__name__}",
        )
    return document


def map_io(
    ctx: ProcessingContext,
    mappings: Any,
    variables: dict[str, Any],
    key: int,
    value: ProcessInstanceValue,
    *,
    local: bool,
) -> bool:
    """Apply input (local) or output (propagated) mappings; an incident when one fails."""
    results: dict[str, Any] = {}
    for mapping in mappings:
        try:
            results[mapping.target] = compile_expression(mapping.source).evaluate(variables)
        except FeelError as error:
            element_incident(
                ctx, ErrorType.IO_MAPPING_ERROR, f"{mapping.source}: {error.reason}", value, key
            )
            return False
    if local:
        for name, result in results.items():
            set_variable(ctx, key, name, result, value)
    else:
        propagate_variables(ctx, value.flow_scope_key, results, value)
    return True


def set_variable(
    ctx: ProcessingContext, scope_key: int, name: str, result: Any, value: ProcessInstanceValue
) -> None:
    encoded = json_text.write(result)
    existing = variable_json(ctx.state, scope_key, name)
    if existing is not None and (existing == encoded or _canonical(existing) == encoded):
        return
    variable = VariableValue(
        name=name,
        value=encoded,
        scope_key=scope_key,
        process_instance_key=value.process_instance_key,
        process_definition_key=value.process_definition_key,
        bpmn_process_id=value.bpmn_process_id,
    )
    intent = VariableIntent.UPDATED if existing is not None else VariableIntent.CREATED
    ctx.append_event(intent, variable, ctx.keys.next_key())


def _canonical(text: str) -> str:
    return json_text.write(json_text.parse(text))


def propagate_variables(
    ctx: ProcessingContext, scope_key: int, results: dict[str, Any], value: ProcessInstanceValue
) -> None:
    """Zeebe's default merge: set each variable where it is defined, nearest scope first, or
    on the process instance when no scope defines it."""
    chain = scope_chain(ctx.state, scope_key)
    for name, result in results.items():
        target = next(
            (s for s in chain if variable_json(ctx.state, s, name) is not None),
            value.process_instance_key,
        )
        set_variable(ctx, target, name, result, value)


def merge_event_variables(
    ctx: ProcessingContext,
    element: Any,
    key: int,
    value: ProcessInstanceValue,
    variables: dict[str, Any],
) -> None:
    """An event's variables, merged as a job completion's: local when the element has output
    mappings (they decide what leaves), else set where defined or on the instance."""
    if not variables:
        return
    if element.outputs:
        for name, result in variables.items():
            set_variable(ctx, key, name, result, value)
    else:
        propagate_variables(ctx, key, variables, value)
