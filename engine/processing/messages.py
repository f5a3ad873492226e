"""Messages on their partition (murmur2 of the correlation key): publishing, buffering,
deduplication, expiry, and the message side of subscriptions.

MESSAGE PUBLISH: a messageId already buffered under the same name and correlation key is
rejected ALREADY_EXISTS. The message (PUBLISHED) correlates, in this order, to the open catch
event subscriptions of its name and key (at most one per process, as in Zeebe: a message
correlates once per bpmnProcessId), then to message start events of the latest process
versions (no second instance while one started by the same correlation key is active), and
stays buffered until its deadline (a time to live of 0: EXPIRED at once). The reply says where
it went: MESSAGE_SUBSCRIPTION CORRELATING or MESSAGE_START_EVENT_SUBSCRIPTION CORRELATED
(with the process instance), or MESSAGE PUBLISHED when it was only buffered.

MESSAGE_SUBSCRIPTION CREATE (from an instance's partition) stores the subscription and
correlates the oldest buffered message that fits; CORRELATING sends PROCESS_MESSAGE_SUBSCRIPTION
CORRELATE to the instance, which answers MESSAGE_SUBSCRIPTION CORRELATE (done) or REJECT (the
element no longer waits: the message is free again). DELETE removes the subscription.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from engine.processing import start_events
from engine.processing.context import MAX_DEADLINE, ProcessingContext, RejectionError
from engine.processing.engine import MAX_DUE_COMMANDS, Engine
from engine.processing.mappings import variables_document
from engine.protocol.enums import RejectionType
from engine.protocol.intents import (
    MessageIntent,
    MessageSubscriptionIntent,
    ProcessMessageSubscriptionIntent,
)
from engine.protocol.keys import kafka_partition_of_key
from engine.protocol.records import Record, command
from engine.protocol.values import (
    MessageSubscriptionValue,
    MessageValue,
    ProcessMessageSubscriptionValue,
)
from engine.state import ColumnFamilies, PartitionDb

MESSAGES = ColumnFamilies.MESSAGE
BUFFER = ColumnFamilies.MESSAGE_CORRELATION  # (name, correlation key, message key)
DEADLINES = ColumnFamilies.MESSAGE_DEADLINE
IDS = ColumnFamilies.MESSAGE_ID
CORRELATED = ColumnFamilies.MESSAGE_CORRELATED
SUBSCRIPTIONS = ColumnFamilies.MESSAGE_SUBSCRIPTION  # (name, correlation key, element key)


def publish(record: Record, ctx: ProcessingContext) -> None:
    value = record.value
    assert isinstance(value, MessageValue)
    if not value.name:
        raise RejectionError(RejectionType.INVALID_ARGUMENT, "the message name is empty")
    variables_document(value.variables)  # validated here, kept as the text
    if value.message_id:
        existing = ctx.state.column(IDS).get((value.name, value.correlation_key, value.message_id))
        if existing is not None:
            raise RejectionError(
                RejectionType.ALREADY_EXISTS,
                f"a message named '{value.name}' with correlation key"
                f" '{value.correlation_key}' and message id '{value.message_id}' is already"
                f" published (key {existing}) and has not expired",
            )
    ttl = value.time_to_live if value.time_to_live >= 0 else ctx.message_ttl_ms
    if ctx.now + ttl > MAX_DEADLINE:
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT,
            f"a time to live of {ttl} ms puts the deadline past {MAX_DEADLINE}",
        )
    key = ctx.keys.next_key()
    message = replace(
        value, time_to_live=ttl, deadline=ctx.now + ttl, variables=value.variables or "{}"
    )
    published = ctx.append_event(MessageIntent.PUBLISHED, message, key)
    answer = _correlate_to_subscriptions(ctx, key, message)
    started = start_events.correlate(ctx, key, message)
    if ttl == 0:
        ctx.append_event(MessageIntent.EXPIRED, message, key)
    ctx.respond(answer or started or published)


def _correlate_to_subscriptions(
    ctx: ProcessingContext, message_key: int, message: MessageValue
) -> Record | None:
    first = None
    prefix = SUBSCRIPTIONS.key.prefix(message.name, message.correlation_key)
    for (_, _, element_key), stored in list(ctx.state.column(SUBSCRIPTIONS).items(prefix)):
        if stored["correlating"] > 0 or is_correlated(
            ctx.state, message_key, stored["bpmnProcessId"]
        ):
            continue
        record = _start_correlating(ctx, message_key, message, element_key, stored)
        first = first or record
    return first


def is_correlated(db: PartitionDb, message_key: int, bpmn_process_id: str) -> bool:
    return db.column(CORRELATED).exists((message_key, bpmn_process_id))


def _start_correlating(
    ctx: ProcessingContext,
    message_key: int,
    message: MessageValue,
    element_key: int,
    stored: dict[str, Any],
) -> Record:
    subscription = MessageSubscriptionValue(
        process_instance_key=stored["processInstanceKey"],
        element_instance_key=element_key,
        bpmn_process_id=stored["bpmnProcessId"],
        message_key=message_key,
        message_name=message.name,
        correlation_key=message.correlation_key,
        interrupting=stored["interrupting"],
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


def create_subscription(record: Record, ctx: ProcessingContext) -> None:
    value = record.value
    assert isinstance(value, MessageSubscriptionValue)
    ctx.append_event(MessageSubscriptionIntent.CREATED, value, value.element_instance_key)
    _correlate_buffered(ctx, value)


def _correlate_buffered(ctx: ProcessingContext, value: MessageSubscriptionValue) -> None:
    prefix = BUFFER.key.prefix(value.message_name, value.correlation_key)
    for (_, _, message_key), _unused in ctx.state.column(BUFFER).items(prefix):
        stored = ctx.state.column(MESSAGES).get(message_key)
        if stored is None or stored["deadline"] <= ctx.now:
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


def correlate_subscription(record: Record, ctx: ProcessingContext) -> None:
    """The instance took the message: CORRELATED; the subscription waits for the next one
    (a non-interrupting boundary) or is deleted when its element ends."""
    value = record.value
    assert isinstance(value, MessageSubscriptionValue)
    _stored_subscription(ctx, value)
    ctx.append_event(MessageSubscriptionIntent.CORRELATED, value, value.element_instance_key)


def reject_subscription(record: Record, ctx: ProcessingContext) -> None:
    """The element no longer waited: the message may correlate to another instance."""
    value = record.value
    assert isinstance(value, MessageSubscriptionValue)
    ctx.append_event(MessageSubscriptionIntent.REJECTED, value, value.element_instance_key)
    stored = ctx.state.column(MESSAGES).get(value.message_key)
    if stored is not None:
        _correlate_to_subscriptions(ctx, value.message_key, message_value(stored))


def delete_subscription(record: Record, ctx: ProcessingContext) -> None:
    value = record.value
    assert isinstance(value, MessageSubscriptionValue)
    _stored_subscription(ctx, value)
    ctx.append_event(MessageSubscriptionIntent.DELETED, value, value.element_instance_key)


def _stored_subscription(ctx: ProcessingContext, value: MessageSubscriptionValue) -> dict[str, Any]:
    key = (value.message_name, value.correlation_key, value.element_instance_key)
    stored = ctx.state.column(SUBSCRIPTIONS).get(key)
    if stored is None:
        raise RejectionError(
            RejectionType.NOT_FOUND,
            f"no subscription of element instance {value.element_instance_key} to message"
            f" '{value.message_name}' with correlation key '{value.correlation_key}'",
        )
    result: dict[str, Any] = stored
    return result


def expire(record: Record, ctx: ProcessingContext) -> None:
    stored = ctx.state.column(MESSAGES).get(record.key)
    if stored is None:
        raise RejectionError(RejectionType.NOT_FOUND, f"no buffered message {record.key}")
    if stored["deadline"] > ctx.now:
        raise RejectionError(RejectionType.INVALID_STATE, f"message {record.key} has not expired")
    ctx.append_event(MessageIntent.EXPIRED, message_value(stored), record.key)


def expired_messages(db: PartitionDb, now: int) -> Iterable[Record]:
    """The due-date checker: EXPIRE for the messages longest past their deadline, at most
    MAX_DUE_COMMANDS."""
    due: list[Record] = []
    for (deadline, key), _unused in db.column(DEADLINES).items():
        if deadline > now or len(due) == MAX_DUE_COMMANDS:
            break
        due.append(command(MessageIntent.EXPIRE, MessageValue(), key=key))
    return due


def message_value(stored: dict[str, Any]) -> MessageValue:
    return MessageValue(
        name=stored["name"],
        correlation_key=stored["correlationKey"],
        time_to_live=stored["ttl"],
        deadline=stored["deadline"],
        variables=stored["variables"],
        message_id=stored["messageId"],
    )


# -- appliers ---------------------------------------------------------------------------------


def apply_published(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, MessageValue)
    db.column(MESSAGES).upsert(
        record.key,
        {
            "name": value.name,
            "correlationKey": value.correlation_key,
            "ttl": value.time_to_live,
            "deadline": value.deadline,
            "variables": value.variables,
            "messageId": value.message_id,
        },
    )
    db.column(BUFFER).upsert((value.name, value.correlation_key, record.key), None)
    db.column(DEADLINES).upsert((value.deadline, record.key), None)
    if value.message_id:
        db.column(IDS).upsert((value.name, value.correlation_key, value.message_id), record.key)


def apply_expired(record: Record, db: PartitionDb) -> None:
    stored = db.column(MESSAGES).get(record.key)
    if stored is None:
        return
    db.column(MESSAGES).delete(record.key)
    db.column(BUFFER).delete((stored["name"], stored["correlationKey"], record.key))
    db.column(DEADLINES).delete((stored["deadline"], record.key))
    if stored["messageId"]:
        db.column(IDS).delete((stored["name"], stored["correlationKey"], stored["messageId"]))
    for (_, process_id), _unused in list(
        db.column(CORRELATED).items(CORRELATED.key.prefix(record.key))
    ):
        db.column(CORRELATED).delete((record.key, process_id))


def apply_subscription_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, MessageSubscriptionValue)
    db.column(SUBSCRIPTIONS).upsert(
        (value.message_name, value.correlation_key, value.element_instance_key),
        {
            "processInstanceKey": value.process_instance_key,
            "bpmnProcessId": value.bpmn_process_id,
            "interrupting": value.interrupting,
            "correlating": -1,
        },
    )


def _set_correlating(db: PartitionDb, value: MessageSubscriptionValue, message_key: int) -> None:
    key = (value.message_name, value.correlation_key, value.element_instance_key)
    stored = db.column(SUBSCRIPTIONS).get(key)
    if stored is not None:
        db.column(SUBSCRIPTIONS).update(key, {**stored, "correlating": message_key})


def apply_correlating(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, MessageSubscriptionValue)
    _set_correlating(db, value, value.message_key)
    if db.column(MESSAGES).get(value.message_key) is not None:
        db.column(CORRELATED).upsert((value.message_key, value.bpmn_process_id), None)


def apply_correlated(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, MessageSubscriptionValue)
    _set_correlating(db, value, -1)


def apply_rejected(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, MessageSubscriptionValue)
    _set_correlating(db, value, -1)
    db.column(CORRELATED).delete((value.message_key, value.bpmn_process_id))


def apply_subscription_deleted(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, MessageSubscriptionValue)
    db.column(SUBSCRIPTIONS).delete(
        (value.message_name, value.correlation_key, value.element_instance_key)
    )


def register(engine: Engine) -> None:
    engine.processor(MessageIntent.PUBLISH, publish)
    engine.applier(MessageIntent.PUBLISHED, apply_published)
    engine.processor(MessageIntent.EXPIRE, expire)
    engine.applier(MessageIntent.EXPIRED, apply_expired)
    engine.due_date_checker(expired_messages)
    engine.processor(MessageSubscriptionIntent.CREATE, create_subscription)
    engine.applier(MessageSubscriptionIntent.CREATED, apply_subscription_created)
    engine.applier(MessageSubscriptionIntent.CORRELATING, apply_correlating)
    engine.processor(MessageSubscriptionIntent.CORRELATE, correlate_subscription)
    engine.applier(MessageSubscriptionIntent.CORRELATED, apply_correlated)
    engine.processor(MessageSubscriptionIntent.REJECT, reject_subscription)
    engine.applier(MessageSubscriptionIntent.REJECTED, apply_rejected)
    engine.processor(MessageSubscriptionIntent.DELETE, delete_subscription)
    engine.applier(MessageSubscriptionIntent.DELETED, apply_subscription_deleted)
