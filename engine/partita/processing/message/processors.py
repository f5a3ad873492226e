"""MESSAGE PUBLISH and EXPIRE.

PUBLISH: a messageId already buffered under the same name and correlation key is rejected
ALREADY_EXISTS. The message (PUBLISHED) correlates, in this order, to the open catch event
subscriptions of its name and key (at most one per process, as in Zeebe: a message correlates
once per bpmnProcessId), then to message start events of the latest process versions (no
second instance while one started by the same correlation key is active), and stays buffered
until its deadline (a time to live of 0: EXPIRED at once). The reply says where it went:
MESSAGE_SUBSCRIPTION CORRELATING or MESSAGE_START_EVENT_SUBSCRIPTION CORRELATED (with the
process instance), or MESSAGE PUBLISHED when it was only buffered.

EXPIRE (from the due-date checker) removes a message whose deadline passed.
"""

from __future__ import annotations

from collections.abc import Iterable

from msgspec.structs import replace

from partita.processing.behavior.variables import variables_document
from partita.processing.context import MAX_DEADLINE, ProcessingContext, RejectionError
from partita.processing.dispatch import MAX_DUE_COMMANDS, Handlers
from partita.processing.message import start_events
from partita.processing.message.correlation import correlate_to_subscriptions
from partita.processing.message.state import DEADLINES, IDS, MESSAGES, message_value
from partita.protocol.enums import RejectionType
from partita.protocol.intents import MessageIntent
from partita.protocol.records import Record, command
from partita.protocol.values import MessageValue
from partita.state import PartitionDb

handlers = Handlers()


@handlers.processor(MessageIntent.PUBLISH)
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
    answer = correlate_to_subscriptions(ctx, key, message)
    started = start_events.correlate(ctx, key, message)
    if ttl == 0:
        ctx.append_event(MessageIntent.EXPIRED, message, key)
    ctx.respond(answer or started or published)


@handlers.processor(MessageIntent.EXPIRE)
def expire(record: Record, ctx: ProcessingContext) -> None:
    stored = ctx.state.column(MESSAGES).get(record.key)
    if stored is None:
        raise RejectionError(RejectionType.NOT_FOUND, f"no buffered message {record.key}")
    if stored.deadline > ctx.now:
        raise RejectionError(RejectionType.INVALID_STATE, f"message {record.key} has not expired")
    ctx.append_event(MessageIntent.EXPIRED, message_value(stored), record.key)


@handlers.due_date_checker
def expired_messages(db: PartitionDb, now: int) -> Iterable[Record]:
    """The due-date checker: EXPIRE for the messages longest past their deadline, at most
    MAX_DUE_COMMANDS."""
    due: list[Record] = []
    for (deadline, key), _unused in db.column(DEADLINES).items():
        if deadline > now or len(due) == MAX_DUE_COMMANDS:
            break
        due.append(command(MessageIntent.EXPIRE, MessageValue(), key=key))
    return due
