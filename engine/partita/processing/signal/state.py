"""Signal subscriptions in state: `signal_subscription` by (signal name, owner, catch event id)
for a broadcast to find, and `signal_subscription_by_owner` for an element instance (or a
replaced process version) to close its own. The owner is the element instance that opened the
subscription, or the process definition key of a signal start event."""

from __future__ import annotations

from partita.protocol.values import SignalSubscriptionValue
from partita.state import ColumnFamilies
from partita.state.stored import SignalSubscription
from partita.state.view import StateView

SUBSCRIPTIONS = ColumnFamilies.SIGNAL_SUBSCRIPTION
BY_OWNER = ColumnFamilies.SIGNAL_SUBSCRIPTION_BY_OWNER


def owner_of(value: SignalSubscriptionValue) -> int:
    return (
        value.catch_event_instance_key
        if value.catch_event_instance_key > 0
        else value.process_definition_key
    )


def waiting_for(db: StateView, signal_name: str) -> list[tuple[int, SignalSubscription]]:
    """(owner, subscription) of everything waiting for `signal_name`."""
    return [
        (owner, stored)
        for (_, owner, _), stored in db.column(SUBSCRIPTIONS).items(
            SUBSCRIPTIONS.key.prefix(signal_name)
        )
    ]


def held_by(db: StateView, owner: int) -> list[tuple[str, SignalSubscription]]:
    """(signal name, subscription) of the subscriptions `owner` holds."""
    found = []
    for (_, name, catch_id), _nothing in db.column(BY_OWNER).items(BY_OWNER.key.prefix(owner)):
        stored = db.column(SUBSCRIPTIONS).get((name, owner, catch_id))
        if stored is not None:
            found.append((name, stored))
    return found


def subscription_value(name: str, stored: SignalSubscription) -> SignalSubscriptionValue:
    return SignalSubscriptionValue(
        process_definition_key=stored.process_definition_key,
        bpmn_process_id=stored.bpmn_process_id,
        catch_event_id=stored.catch_event_id,
        catch_event_instance_key=stored.catch_event_instance_key,
        signal_name=name,
    )
