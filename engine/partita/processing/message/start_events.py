"""Message start events: a published message creates an instance on its own partition for
each process whose latest version starts with it (the subscriptions the deployment domain
opens), unless it already correlated to that process or an instance that a message with the
same correlation key started is still active."""

from __future__ import annotations

from partita.processing.behavior.triggers import start_instance
from partita.processing.context import ProcessingContext
from partita.processing.deployment import state as deployment_state
from partita.processing.message.state import CORRELATED, START_SUBSCRIPTIONS, STARTED
from partita.protocol.intents import MessageStartEventSubscriptionIntent as StartSubscription
from partita.protocol.records import Record
from partita.protocol.values import MessageStartEventSubscriptionValue, MessageValue


def correlate(ctx: ProcessingContext, message_key: int, message: MessageValue) -> Record | None:
    """Start instances for `message`; the first CORRELATED record (for the reply) or None."""
    first = None
    prefix = START_SUBSCRIPTIONS.key.prefix(message.name)
    for (_, definition_key), stored in list(ctx.state.column(START_SUBSCRIPTIONS).items(prefix)):
        process_id = stored.bpmn_process_id
        if ctx.state.column(CORRELATED).exists((message_key, process_id)):
            continue
        if message.correlation_key and (
            ctx.state.column(STARTED).get((process_id, message.correlation_key)) is not None
        ):
            continue  # an instance this correlation key started is still active
        deployed = deployment_state.by_key(ctx.state, definition_key)
        if deployed is None:
            continue
        instance_key = ctx.keys.next_key()
        correlated = MessageStartEventSubscriptionValue(
            process_definition_key=definition_key,
            bpmn_process_id=process_id,
            start_event_id=stored.start_event_id,
            message_name=message.name,
            message_key=message_key,
            correlation_key=message.correlation_key,
            process_instance_key=instance_key,
            variables=message.variables,
        )
        record = ctx.append_event(StartSubscription.CORRELATED, correlated, definition_key)
        first = first or record
        start_instance(ctx, deployed, stored.start_event_id, message.variables, instance_key)
    return first
