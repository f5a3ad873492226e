"""The appliers of message events: buffered messages, the subscriptions on the message's
partition (MESSAGE_SUBSCRIPTION), the element instance's own (PROCESS_MESSAGE_SUBSCRIPTION),
and message start event subscriptions."""

from __future__ import annotations

from msgspec.structs import replace

from partita.processing.dispatch import Handlers
from partita.processing.message.state import (
    BUFFER,
    CORRELATED,
    DEADLINES,
    IDS,
    MESSAGES,
    PROCESS_SUBSCRIPTIONS,
    START_SUBSCRIPTIONS,
    STARTED,
    STARTED_BY_INSTANCE,
    SUBSCRIPTIONS,
)
from partita.protocol.intents import (
    MessageIntent,
    MessageSubscriptionIntent,
    ProcessMessageSubscriptionIntent,
)
from partita.protocol.intents import MessageStartEventSubscriptionIntent as StartSubscription
from partita.protocol.records import Record
from partita.protocol.values import (
    MessageStartEventSubscriptionValue,
    MessageSubscriptionValue,
    MessageValue,
    ProcessMessageSubscriptionValue,
)
from partita.state import PartitionDb
from partita.state.stored import (
    Message,
    MessageStartedInstance,
    MessageStartSubscription,
    MessageSubscription,
    ProcessMessageSubscription,
)

handlers = Handlers()

# -- messages and their subscriptions (the message's partition) -------------------------------


@handlers.applier(MessageIntent.PUBLISHED)
def apply_published(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, MessageValue)
    db.column(MESSAGES).upsert(
        record.key,
        Message(
            name=value.name,
            correlation_key=value.correlation_key,
            ttl=value.time_to_live,
            deadline=value.deadline,
            variables=value.variables,
            message_id=value.message_id,
        ),
    )
    db.column(BUFFER).upsert((value.name, value.correlation_key, record.key), None)
    db.column(DEADLINES).upsert((value.deadline, record.key), None)
    if value.message_id:
        db.column(IDS).upsert((value.name, value.correlation_key, value.message_id), record.key)


@handlers.applier(MessageIntent.EXPIRED)
def apply_expired(record: Record, db: PartitionDb) -> None:
    stored = db.column(MESSAGES).get(record.key)
    if stored is None:
        return
    db.column(MESSAGES).delete(record.key)
    db.column(BUFFER).delete((stored.name, stored.correlation_key, record.key))
    db.column(DEADLINES).delete((stored.deadline, record.key))
    if stored.message_id:
        db.column(IDS).delete((stored.name, stored.correlation_key, stored.message_id))
    for (_, process_id), _unused in list(
        db.column(CORRELATED).items(CORRELATED.key.prefix(record.key))
    ):
        db.column(CORRELATED).delete((record.key, process_id))


@handlers.applier(MessageSubscriptionIntent.CREATED)
def apply_subscription_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, MessageSubscriptionValue)
    db.column(SUBSCRIPTIONS).upsert(
        (value.message_name, value.correlation_key, value.element_instance_key),
        MessageSubscription(
            process_instance_key=value.process_instance_key,
            bpmn_process_id=value.bpmn_process_id,
            interrupting=value.interrupting,
        ),
    )


def _set_correlating(db: PartitionDb, value: MessageSubscriptionValue, message_key: int) -> None:
    key = (value.message_name, value.correlation_key, value.element_instance_key)
    stored = db.column(SUBSCRIPTIONS).get(key)
    if stored is not None:
        db.column(SUBSCRIPTIONS).upsert(key, replace(stored, correlating=message_key))


@handlers.applier(MessageSubscriptionIntent.CORRELATING)
def apply_correlating(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, MessageSubscriptionValue)
    _set_correlating(db, value, value.message_key)
    if db.column(MESSAGES).get(value.message_key) is not None:
        db.column(CORRELATED).upsert((value.message_key, value.bpmn_process_id), None)


@handlers.applier(MessageSubscriptionIntent.CORRELATED)
def apply_correlated(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, MessageSubscriptionValue)
    _set_correlating(db, value, -1)


@handlers.applier(MessageSubscriptionIntent.REJECTED)
def apply_rejected(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, MessageSubscriptionValue)
    _set_correlating(db, value, -1)
    db.column(CORRELATED).delete((value.message_key, value.bpmn_process_id))


@handlers.applier(MessageSubscriptionIntent.DELETED)
def apply_subscription_deleted(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, MessageSubscriptionValue)
    db.column(SUBSCRIPTIONS).delete(
        (value.message_name, value.correlation_key, value.element_instance_key)
    )


# -- process message subscriptions (the instance's partition) ---------------------------------


@handlers.applier(ProcessMessageSubscriptionIntent.CREATED)
def apply_process_subscription_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, ProcessMessageSubscriptionValue)
    db.column(PROCESS_SUBSCRIPTIONS).upsert(
        (value.element_instance_key, value.message_name),
        ProcessMessageSubscription(
            subscription_partition_id=value.subscription_partition_id,
            process_instance_key=value.process_instance_key,
            element_instance_key=value.element_instance_key,
            bpmn_process_id=value.bpmn_process_id,
            message_name=value.message_name,
            correlation_key=value.correlation_key,
            element_id=value.element_id,
            interrupting=value.interrupting,
        ),
    )


@handlers.applier(ProcessMessageSubscriptionIntent.DELETED)
def apply_process_subscription_deleted(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, ProcessMessageSubscriptionValue)
    db.column(PROCESS_SUBSCRIPTIONS).delete((value.element_instance_key, value.message_name))


# -- message start event subscriptions --------------------------------------------------------


@handlers.applier(StartSubscription.CREATED)
def apply_start_subscription_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, MessageStartEventSubscriptionValue)
    db.column(START_SUBSCRIPTIONS).upsert(
        (value.message_name, value.process_definition_key),
        MessageStartSubscription(value.bpmn_process_id, value.start_event_id),
    )


@handlers.applier(StartSubscription.DELETED)
def apply_start_subscription_deleted(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, MessageStartEventSubscriptionValue)
    db.column(START_SUBSCRIPTIONS).delete((value.message_name, value.process_definition_key))


@handlers.applier(StartSubscription.CORRELATED)
def apply_start_subscription_correlated(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, MessageStartEventSubscriptionValue)
    db.column(CORRELATED).upsert((value.message_key, value.bpmn_process_id), None)
    if value.correlation_key:
        db.column(STARTED).upsert(
            (value.bpmn_process_id, value.correlation_key), value.process_instance_key
        )
        db.column(STARTED_BY_INSTANCE).upsert(
            value.process_instance_key,
            MessageStartedInstance(value.bpmn_process_id, value.correlation_key),
        )
