"""Compensation subscriptions in state, by (process instance key, subscription key): an
instance has few, so lookups by scope or handler read the instance's own."""

from __future__ import annotations

from partita.protocol.values import CompensationSubscriptionValue
from partita.state import ColumnFamilies
from partita.state.stored import CompensationSubscription
from partita.state.view import StateView

SUBSCRIPTIONS = ColumnFamilies.COMPENSATION_SUBSCRIPTION


def of_instance(db: StateView, instance_key: int) -> list[tuple[int, CompensationSubscription]]:
    """(subscription key, subscription) of a process instance, oldest first."""
    return [
        (key, stored)
        for (_, key), stored in db.column(SUBSCRIPTIONS).items(
            SUBSCRIPTIONS.key.prefix(instance_key)
        )
    ]


def subscription_value(
    instance_key: int, stored: CompensationSubscription, **changes: object
) -> CompensationSubscriptionValue:
    fields: dict[str, object] = {
        "process_instance_key": instance_key,
        "process_definition_key": stored.process_definition_key,
        "compensable_activity_id": stored.compensable_activity_id,
        "compensable_activity_scope_key": stored.compensable_activity_scope_key,
        "compensable_activity_instance_key": stored.compensable_activity_instance_key,
        "compensation_handler_id": stored.compensation_handler_id,
        "throw_event_id": stored.throw_event_id,
        "throw_event_instance_key": stored.throw_event_instance_key,
        "compensation_handler_instance_key": stored.compensation_handler_instance_key,
    }
    return CompensationSubscriptionValue(**(fields | changes))  # type: ignore[arg-type]


def stored_subscription(value: CompensationSubscriptionValue) -> CompensationSubscription:
    return CompensationSubscription(
        process_definition_key=value.process_definition_key,
        compensable_activity_id=value.compensable_activity_id,
        compensable_activity_scope_key=value.compensable_activity_scope_key,
        compensable_activity_instance_key=value.compensable_activity_instance_key,
        compensation_handler_id=value.compensation_handler_id,
        throw_event_id=value.throw_event_id,
        throw_event_instance_key=value.throw_event_instance_key,
        compensation_handler_instance_key=value.compensation_handler_instance_key,
    )
