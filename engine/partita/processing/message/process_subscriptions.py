"""PROCESS_MESSAGE_SUBSCRIPTION CORRELATE: the message partition offers a message to an element
instance waiting for it. Still waiting: PROCESS_MESSAGE_SUBSCRIPTION CORRELATED, the event is
triggered (`behavior.triggers`) and MESSAGE_SUBSCRIPTION CORRELATE confirms it; no longer
waiting (completed, terminated): a rejection, and MESSAGE_SUBSCRIPTION REJECT frees the
message."""

from __future__ import annotations

from msgspec.structs import replace

from partita.processing.behavior.triggers import trigger
from partita.processing.context import ProcessingContext
from partita.processing.deployment import state as deployment_state
from partita.processing.dispatch import Handlers
from partita.processing.instance import state as instance_state
from partita.processing.message.state import PROCESS_SUBSCRIPTIONS, subscription_value
from partita.protocol.enums import RejectionType
from partita.protocol.intents import MessageSubscriptionIntent, ProcessMessageSubscriptionIntent
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.records import Record
from partita.protocol.values import MessageSubscriptionValue, ProcessMessageSubscriptionValue

handlers = Handlers()


@handlers.processor(ProcessMessageSubscriptionIntent.CORRELATE)
def correlate(record: Record, ctx: ProcessingContext) -> None:
    value = record.value
    assert isinstance(value, ProcessMessageSubscriptionValue)
    answer = MessageSubscriptionValue(
        process_instance_key=value.process_instance_key,
        element_instance_key=value.element_instance_key,
        bpmn_process_id=value.bpmn_process_id,
        message_key=value.message_key,
        message_name=value.message_name,
        correlation_key=value.correlation_key,
        interrupting=value.interrupting,
        variables=value.variables,
    )
    stored = ctx.state.column(PROCESS_SUBSCRIPTIONS).get(
        (value.element_instance_key, value.message_name)
    )
    owner = instance_state.instance(ctx.state, value.element_instance_key)
    if (
        stored is None
        or stored.correlation_key != value.correlation_key
        or owner is None
        or owner.state != Instance.ELEMENT_ACTIVATED.name
    ):
        ctx.reject(
            RejectionType.INVALID_STATE,
            f"element instance {value.element_instance_key} no longer waits for message"
            f" '{value.message_name}' with correlation key '{value.correlation_key}'",
        )
        ctx.append_command(MessageSubscriptionIntent.REJECT, answer)
        return
    correlated = replace(
        subscription_value(stored), message_key=value.message_key, variables=value.variables
    )
    ctx.append_event(
        ProcessMessageSubscriptionIntent.CORRELATED, correlated, value.element_instance_key
    )
    ctx.append_command(MessageSubscriptionIntent.CORRELATE, answer)
    deployed = deployment_state.by_key(ctx.state, int(owner.process_definition_key))
    assert deployed is not None
    trigger(
        ctx,
        deployed.model(ctx.state),
        value.element_instance_key,
        stored.element_id,
        value.variables,
    )
