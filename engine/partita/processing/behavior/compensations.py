"""Compensation subscriptions that can no longer be triggered: those of an instance that ended
(completed or terminated) and those inside a subprocess that was terminated."""

from __future__ import annotations

from partita.processing.compensation.state import of_instance, subscription_value
from partita.processing.context import ProcessingContext
from partita.protocol.intents import CompensationSubscriptionIntent as Compensation


def delete_subscriptions(
    ctx: ProcessingContext, instance_key: int, scope_key: int | None = None
) -> None:
    """COMPENSATION_SUBSCRIPTION DELETED for each of the instance's subscriptions, or only for
    those inside `scope_key` (at any depth)."""
    subscriptions = of_instance(ctx.state, instance_key)
    if not subscriptions:
        return
    if scope_key is not None:
        inside = {scope_key}
        grown = True
        while grown:  # a nested scope's subscriptions are older than the scope's own
            before = len(inside)
            inside |= {
                stored.compensable_activity_instance_key
                for _, stored in subscriptions
                if stored.compensable_activity_scope_key in inside
            }
            grown = len(inside) > before
        subscriptions = [
            (key, stored)
            for key, stored in subscriptions
            if stored.compensable_activity_scope_key in inside
        ]
    for key, stored in subscriptions:
        value = subscription_value(instance_key, stored)
        ctx.append_event(Compensation.DELETED, value, key)
