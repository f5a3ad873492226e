"""Call activities: a call activity starts the latest version of the called process as a child
instance (on this partition) with the parent's variables (all visible ones, or only its input
mappings'), and completes when the child completes, taking the child's variables (all, or only
through its output mappings). Terminating it terminates the child (`behavior.termination`)."""

from __future__ import annotations

from typing import Any

from partita.bpmn import CallActivity, FlowNode
from partita.processing.behavior.expressions import text_of
from partita.processing.behavior.variables import merge_event_variables, set_variable
from partita.processing.context import ProcessingContext
from partita.processing.deployment import state as deployment_state
from partita.processing.deployment.state import DeployedProcess
from partita.processing.instance import state as instance_state
from partita.processing.variable.state import local_variables, visible_variables
from partita.protocol.enums import BpmnElementType
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.values import ProcessInstanceValue
from partita.state.stored import ElementInstance


class CalledElementError(Exception):
    """The process a call activity names cannot be started."""


def called_process(ctx: ProcessingContext, element: FlowNode, key: int) -> DeployedProcess | None:
    """The process call activity instance `key` starts (None for other elements);
    CalledElementError when none is deployed, ExpressionError when its id expression fails."""
    if not isinstance(element, CallActivity):
        return None
    variables = visible_variables(ctx.state, key) if element.process_id.startswith("=") else {}
    process_id = text_of(element.process_id, variables, f"{element.id}: the called process")
    called = deployment_state.latest(ctx.state, process_id)
    if called is None:
        raise CalledElementError(f"{element.id}: no process '{process_id}' is deployed")
    return called


def call(
    ctx: ProcessingContext,
    activity: CallActivity,
    key: int,
    value: ProcessInstanceValue,
    called: DeployedProcess,
) -> None:
    """Start the child instance of call activity instance `key`."""
    child_key = ctx.keys.next_key()
    child = ProcessInstanceValue(
        bpmn_process_id=called.bpmn_process_id,
        version=called.version,
        process_definition_key=called.key,
        process_instance_key=child_key,
        element_id=called.bpmn_process_id,
        bpmn_element_type=BpmnElementType.PROCESS,
        parent_process_instance_key=value.process_instance_key,
        parent_element_instance_key=key,
    )
    if activity.propagate_all_parent_variables:
        variables = visible_variables(ctx.state, key)
    else:
        variables = local_variables(ctx.state, key)  # its input mappings
    for name, result in variables.items():
        set_variable(ctx, child_key, name, result, child)
    ctx.append_command(Instance.ACTIVATE_ELEMENT, child, child_key)


def child_completed(
    ctx: ProcessingContext, stored: ElementInstance, variables: dict[str, Any]
) -> None:
    """A child instance completed: hand its variables to the call activity and complete it."""
    parent_key = int(stored.parent_element_instance_key)
    parent = instance_state.instance(ctx.state, parent_key) if parent_key > 0 else None
    if parent is None or parent.state != Instance.ELEMENT_ACTIVATED.name:
        return
    parent_value = instance_state.value_of(parent)
    deployed = deployment_state.by_key(ctx.state, parent_value.process_definition_key)
    assert deployed is not None
    activity = deployed.model(ctx.state).element(parent_value.element_id)
    assert isinstance(activity, CallActivity)
    if activity.propagate_all_child_variables:
        merge_event_variables(ctx, activity, parent_key, parent_value, variables)
    elif activity.outputs:  # only what the output mappings take
        for name, result in variables.items():
            set_variable(ctx, parent_key, name, result, parent_value)
    ctx.append_command(Instance.COMPLETE_ELEMENT, parent_value, parent_key)
