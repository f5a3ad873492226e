"""MESSAGE_SUBSCRIPTION commands, on the message's partition.

CREATE (from an instance's partition) stores the subscription and correlates the oldest
buffered message that fits; CORRELATING sends PROCESS_MESSAGE_SUBSCRIPTION CORRELATE to the
instance, which answers CORRELATE (done) or REJECT (the element no longer waits: the message
is free again). DELETE removes the subscription.
"""

from __future__ import annotations

from partita.processing.context import ProcessingContext, RejectionError
from partita.processing.dispatch import Handlers
from partita.processing.message.correlation import correlate_buffered, correlate_to_subscriptions
from partita.processing.message.state import MESSAGES, SUBSCRIPTIONS, message_value
from partita.protocol.enums import RejectionType
from partita.protocol.intents import MessageSubscriptionIntent
from partita.protocol.records import Record
from partita.protocol.values import MessageSubscriptionValue
from partita.state.stored import MessageSubscription

handlers = Handlers()


@handlers.processor(MessageSubscriptionIntent.CREATE)
def create_subscription(record: Record, ctx: ProcessingContext) -> None:
    value = record.value
    assert isinstance(value, MessageSubscriptionValue)
    ctx.append_event(MessageSubscriptionIntent.CREATED, value, value.element_instance_key)
    correlate_buffered(ctx, value)


@handlers.processor(MessageSubscriptionIntent.CORRELATE)
def correlate_subscription(record: Record, ctx: ProcessingContext) -> None:
    """The instance took the message: CORRELATED; the subscription waits for the next one
    (a non-interrupting boundary) or is deleted when its element ends."""
    value = record.value
    assert isinstance(value, MessageSubscriptionValue)
    _stored_subscription(ctx, value)
    ctx.append_event(MessageSubscriptionIntent.CORRELATED, value, value.element_instance_key)


@handlers.processor(MessageSubscriptionIntent.REJECT)
def reject_subscription(record: Record, ctx: ProcessingContext) -> None:
    """The element no longer waited: the message may correlate to another instance."""
    value = record.value
    assert isinstance(value, MessageSubscriptionValue)
    ctx.append_event(MessageSubscriptionIntent.REJECTED, value, value.element_instance_key)
    stored = ctx.state.column(MESSAGES).get(value.message_key)
    if stored is not None:
        correlate_to_subscriptions(ctx, value.message_key, message_value(stored))


@handlers.processor(MessageSubscriptionIntent.DELETE)
def delete_subscription(record: Record, ctx: ProcessingContext) -> None:
    value = record.value
    assert isinstance(value, MessageSubscriptionValue)
    _stored_subscription(ctx, value)
    ctx.append_event(MessageSubscriptionIntent.DELETED, value, value.element_instance_key)


def _stored_subscription(
    ctx: ProcessingContext, value: MessageSubscriptionValue
) -> MessageSubscription:
    key = (value.message_name, value.correlation_key, value.element_instance_key)
    stored = ctx.state.column(SUBSCRIPTIONS).get(key)
    if stored is None:
        raise RejectionError(
            RejectionType.NOT_FOUND,
            f"no subscription of element instance {value.element_instance_key} to message"
            f" '{value.message_name}' with correlation key '{value.correlation_key}'",
        )
    return stored
