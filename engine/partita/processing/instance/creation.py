"""PROCESS_INSTANCE_CREATION CREATE and CREATE_WITH_AWAITING_RESULT: start an instance of a
deployed process.

The process is chosen by definition key, or by bpmnProcessId and version (-1: the latest).
The instance gets a key, CREATED answers the request, the creation variables become VARIABLE
CREATED events on the instance scope, and ACTIVATE_ELEMENT of the process follows in the batch.
With CREATE_WITH_AWAITING_RESULT the answer waits until the instance ends
(`behavior.results`). A creation that names a process this partition has not received yet is
handed to partition 0, which deploys every process first.
"""

from __future__ import annotations

from msgspec.structs import replace

from partita.processing.behavior.variables import set_variable, variables_document
from partita.processing.context import HandOverError, ProcessingContext, RejectionError
from partita.processing.deployment import state as deployment_state
from partita.processing.dispatch import Handlers
from partita.protocol.enums import BpmnElementType, RejectionType
from partita.protocol.intents import ProcessInstanceCreationIntent as Creation
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.records import Record
from partita.protocol.values import ProcessInstanceCreationValue, ProcessInstanceValue

handlers = Handlers()


@handlers.processor(Creation.CREATE, Creation.CREATE_WITH_AWAITING_RESULT)
def create(command: Record, ctx: ProcessingContext) -> None:
    value = command.value
    assert isinstance(value, ProcessInstanceCreationValue)
    deployed = _find(ctx, value)
    if not deployed.model(ctx.state).start_event:
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT,
            f"process '{deployed.bpmn_process_id}' has no none start event: it starts by a"
            " message or a timer, not by creating an instance",
        )
    variables = variables_document(value.variables)
    key = ctx.keys.next_key()
    created = replace(
        value,
        bpmn_process_id=deployed.bpmn_process_id,
        version=deployed.version,
        process_definition_key=deployed.key,
        process_instance_key=key,
    )
    awaiting = command.intent is Creation.CREATE_WITH_AWAITING_RESULT
    ctx.append_event(Creation.CREATED, created, key, respond=not awaiting)
    process = ProcessInstanceValue(
        bpmn_process_id=deployed.bpmn_process_id,
        version=deployed.version,
        process_definition_key=deployed.key,
        process_instance_key=key,
        element_id=deployed.bpmn_process_id,
        bpmn_element_type=BpmnElementType.PROCESS,
    )
    for name, result in variables.items():
        set_variable(ctx, key, name, result, process)
    if command.intent is Creation.CREATE_WITH_AWAITING_RESULT and ctx.reply_to is not None:
        ctx.awaiting.add(key, ctx.reply_to, tuple(value.fetch_variables), ctx.now)
        ctx.responded = True  # the answer comes when the instance ends
    ctx.append_command(Instance.ACTIVATE_ELEMENT, process, key)


def _find(
    ctx: ProcessingContext, value: ProcessInstanceCreationValue
) -> deployment_state.DeployedProcess:
    if value.process_definition_key > 0:
        found = deployment_state.by_key(ctx.state, value.process_definition_key)
        what = f"process definition {value.process_definition_key}"
    elif value.version >= 0:
        found = deployment_state.by_version(ctx.state, value.bpmn_process_id, value.version)
        what = f"version {value.version} of process '{value.bpmn_process_id}'"
    else:
        found = deployment_state.latest(ctx.state, value.bpmn_process_id)
        what = f"process '{value.bpmn_process_id}'"
    if found is None:
        if ctx.partition != 0:  # maybe deployed, its distribution not read here yet
            raise HandOverError(0, f"{what} is not known on partition {ctx.partition}")
        raise RejectionError(RejectionType.NOT_FOUND, f"{what} is not deployed")
    return found
