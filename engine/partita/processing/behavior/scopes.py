"""A scope's own completion: once no flow is in transit in it and no child runs, an active
scope (a process, a subprocess, a multi-instance body, an ad-hoc subprocess or its inner
instance) completes."""

from __future__ import annotations

from partita.processing.context import ProcessingContext
from partita.processing.instance import state as instance_state
from partita.protocol.intents import ProcessInstanceIntent as Instance


def complete_scope_if_done(ctx: ProcessingContext, scope_key: int) -> None:
    """COMPLETE_ELEMENT for `scope_key` when nothing runs in it any more."""
    scope = instance_state.instance(ctx.state, scope_key)
    if scope is None or scope.active_flows > 0 or instance_state.children(ctx.state, scope_key):
        return
    if scope.state != Instance.ELEMENT_ACTIVATED.name:
        return
    ctx.append_command(Instance.COMPLETE_ELEMENT, instance_state.value_of(scope), scope_key)
