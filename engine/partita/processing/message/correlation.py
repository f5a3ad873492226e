"""A message meets a subscription: MESSAGE_SUBSCRIPTION CORRELATING on the message's
partition and PROCESS_MESSAGE_SUBSCRIPTION CORRELATE to the instance's, at most once per
bpmnProcessId for one message (as in Zeebe); a subscription already correlating waits for the
answer."""

from __future__ import annotations

from partita.processing.context import ProcessingContext
from partita.processing.message.state import (
    BUFFER,
    MESSAGES,
    SUBSCRIPTIONS,
    is_correlated,
    message_value,
)
from partita.protocol.intents import MessageSubscriptionIntent, ProcessMessageSubscriptionIntent
from partita.protocol.keys import kafka_partition_of_key
from partita.protocol.records import Record
from partita.protocol.values import (
    MessageSubscriptionValue,
    MessageValue,
    ProcessMessageSubscriptionValue,
)
from partita.state.stored import MessageSubscription


def correlate_to_subscriptions(
    ctx: ProcessingContext, message_key: int, message: MessageValue
) -> Record | None:
    """Offer the message to every open subscription of its name and correlation key; the
    first CORRELATING record (for the reply) or None."""
    first = None
    prefix = SUBSCRIPTIONS.key.prefix(message.name, message.correlation_key)
    for (_, _, element_key), stored in list(ctx.state.column(SUBSCRIPTIONS).items(prefix)):
        if stored.correlating > 0 or is_correlated(ctx.state, message_key, stored.bpmn_process_id):
            continue
        record = _start_correlating(ctx, message_key, message, element_key, stored)
        first = first or record
    return first


def correlate_buffered(ctx: ProcessingContext, value: MessageSubscriptionValue) -> None:
    """A new subscription takes the oldest buffered message that fits, if any."""
    prefix = BUFFER.key.prefix(value.message_name, value.correlation_key)
    for (_, _, message_key), _unused in ctx.state.column(BUFFER).items(prefix):
        stored = ctx.state.column(MESSAGES).get(message_key)
        if stored is None or stored.deadline <= ctx.now:
            continue
        if is_correlated(ctx.state, message_key, value.bpmn_process_id):
            continue
        subscription = ctx.state.column(SUBSCRIPTIONS).get(
            (value.message_name, value.correlation_key, value.element_instance_key)
        )
        assert subscription is not None
        _start_correlating(
            ctx, message_key, message_value(stored), value.element_instance_key, subscription
        )
        return


def _start_correlating(
    ctx: ProcessingContext,
    message_key: int,
    message: MessageValue,
    element_key: int,
    stored: MessageSubscription,
) -> Record:
    subscription = MessageSubscriptionValue(
        process_instance_key=stored.process_instance_key,
        element_instance_key=element_key,
        bpmn_process_id=stored.bpmn_process_id,
        message_key=message_key,
        message_name=message.name,
        correlation_key=message.correlation_key,
        interrupting=stored.interrupting,
        variables=message.variables,
    )
    record = ctx.append_event(MessageSubscriptionIntent.CORRELATING, subscription, element_key)
    ctx.append_command(
        ProcessMessageSubscriptionIntent.CORRELATE,
        ProcessMessageSubscriptionValue(
            subscription_partition_id=ctx.partition_id,
            process_instance_key=subscription.process_instance_key,
            element_instance_key=element_key,
            bpmn_process_id=subscription.bpmn_process_id,
            message_key=message_key,
            message_name=message.name,
            correlation_key=message.correlation_key,
            interrupting=subscription.interrupting,
            variables=message.variables,
        ),
        element_key,
        partition=kafka_partition_of_key(element_key),
    )
    return record
