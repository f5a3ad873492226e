"""Messages and their subscriptions in state.

On the message's partition: `message` (key -> the buffered message), indexed by (name,
correlation key, key) in `message_correlation`, by (deadline, key) in `message_deadline` and by
(name, correlation key, message id) in `message_id`; `message_correlated` records which
processes a message has correlated to (once per bpmnProcessId); `message_subscription` holds
the subscriptions of waiting element instances by (name, correlation key, element key).

On the instance's partition: `process_message_subscription` holds what an element instance
waits for, by (element key, message name).

Message start events: `message_start_event_subscription` by (message name, definition key) on
every partition, and `message_start_instance` / `message_start_by_instance` for the instances
a correlation key started (no second one while it is active).
"""

from __future__ import annotations

from partita.protocol.values import MessageValue, ProcessMessageSubscriptionValue
from partita.state import ColumnFamilies
from partita.state.stored import Message, ProcessMessageSubscription
from partita.state.view import StateView

MESSAGES = ColumnFamilies.MESSAGE
BUFFER = ColumnFamilies.MESSAGE_CORRELATION  # (name, correlation key, message key)
DEADLINES = ColumnFamilies.MESSAGE_DEADLINE
IDS = ColumnFamilies.MESSAGE_ID
CORRELATED = ColumnFamilies.MESSAGE_CORRELATED
SUBSCRIPTIONS = ColumnFamilies.MESSAGE_SUBSCRIPTION  # (name, correlation key, element key)
PROCESS_SUBSCRIPTIONS = ColumnFamilies.PROCESS_MESSAGE_SUBSCRIPTION  # (element key, name)
START_SUBSCRIPTIONS = ColumnFamilies.MESSAGE_START_EVENT_SUBSCRIPTION  # (name, definition key)
STARTED = ColumnFamilies.MESSAGE_START_INSTANCE  # (bpmnProcessId, correlation key) -> instance
STARTED_BY_INSTANCE = ColumnFamilies.MESSAGE_START_BY_INSTANCE


def message_value(stored: Message) -> MessageValue:
    return MessageValue(
        name=stored.name,
        correlation_key=stored.correlation_key,
        time_to_live=stored.ttl,
        deadline=stored.deadline,
        variables=stored.variables,
        message_id=stored.message_id,
    )


def is_correlated(db: StateView, message_key: int, bpmn_process_id: str) -> bool:
    return db.column(CORRELATED).exists((message_key, bpmn_process_id))


def subscription_value(stored: ProcessMessageSubscription) -> ProcessMessageSubscriptionValue:
    """The value of a stored process message subscription."""
    return ProcessMessageSubscriptionValue(
        subscription_partition_id=stored.subscription_partition_id,
        process_instance_key=stored.process_instance_key,
        element_instance_key=stored.element_instance_key,
        bpmn_process_id=stored.bpmn_process_id,
        message_name=stored.message_name,
        correlation_key=stored.correlation_key,
        element_id=stored.element_id,
        interrupting=stored.interrupting,
    )
