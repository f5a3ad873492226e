"""Terminating element instances: PROCESS_INSTANCE CANCEL, interrupting events, terminate end
events and met completion conditions end what runs before it completes."""

from __future__ import annotations

from partita.processing.behavior import task_listeners
from partita.processing.behavior.after_termination import is_terminating, terminated
from partita.processing.behavior.compensations import delete_subscriptions
from partita.processing.behavior.results import reject_later
from partita.processing.behavior.subscriptions import close_events
from partita.processing.context import ProcessingContext
from partita.processing.instance import state as instance_state
from partita.processing.job.state import JOBS, job_value
from partita.processing.user_task import state as user_task_state
from partita.protocol.enums import BpmnElementType
from partita.protocol.intents import JobIntent, UserTaskIntent
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.state.stored import ElementInstance, UserTask

_SCOPES = {
    BpmnElementType.SUB_PROCESS,
    BpmnElementType.EVENT_SUB_PROCESS,
    BpmnElementType.AD_HOC_SUB_PROCESS,
    BpmnElementType.MULTI_INSTANCE_BODY,
}
"""What compensation subscriptions can be scoped to, beside the process."""


def terminate_element(
    ctx: ProcessingContext, key: int, stored: ElementInstance, *, respond: bool = False
) -> bool:
    """Terminate element instance `key` and what runs in it, depth-first: TERMINATING, the
    children, the element's job or user task, its events, a called instance, TERMINATED.
    `respond` makes TERMINATING the command's reply. A client awaiting the instance's result
    is answered with a rejection: it ended without one.

    False when the termination waits: a user task with canceling task listeners runs their
    jobs first (USER_TASK CANCELING), and it and the scopes around it stay TERMINATING until
    the last one completes (`after_termination.finish_termination`); the caller then leaves
    what follows to that (the trigger it wrote waits in state)."""
    value = instance_state.value_of(stored)
    ctx.append_event(Instance.ELEMENT_TERMINATING, value, key, respond=respond)
    waits = False
    for child in instance_state.children(ctx.state, key):
        child_stored = instance_state.instance(ctx.state, child)
        if child_stored is not None:
            waits |= not terminate_or_wait(ctx, child, child_stored)
    job_key = stored.job_key
    job = ctx.state.column(JOBS).get(job_key) if job_key > 0 else None
    if job is not None:
        ctx.append_event(JobIntent.CANCELED, job_value(job), job_key)
    task_key = stored.user_task_key
    task = user_task_state.task(ctx.state, task_key) if task_key > 0 else None
    if task is not None:
        waits |= not _cancel_task(ctx, task_key, task)
    close_events(ctx, key)
    if stored.element_type is BpmnElementType.PROCESS:
        delete_subscriptions(ctx, key)
    elif stored.element_type in _SCOPES:
        delete_subscriptions(ctx, stored.process_instance_key, key)
    called_key = stored.called_child_key
    called = instance_state.instance(ctx.state, called_key) if called_key > 0 else None
    if called is not None:  # a call activity: its child instance goes with it
        waits |= not terminate_or_wait(ctx, called_key, called)
    if waits:
        return False
    terminated(ctx, key, value)
    return True


def terminate_or_wait(ctx: ProcessingContext, key: int, stored: ElementInstance) -> bool:
    """Terminate `key` unless it terminates already; False while its termination waits."""
    if is_terminating(stored):
        return False
    return terminate_element(ctx, key, stored)


def _cancel_task(ctx: ProcessingContext, task_key: int, task: UserTask) -> bool:
    """CANCELING, then CANCELED at once, or (False) the first canceling task listener's job."""
    cancelled = user_task_state.task_value(task_key, task)
    ctx.append_event(UserTaskIntent.CANCELING, cancelled, task_key)
    reason = "user task was canceled during ongoing transition"
    reject_later(ctx, task_key, UserTaskIntent.COMPLETE, cancelled, reason)
    under_way = user_task_state.transition(ctx.state, task_key)
    if under_way is not None and task_listeners.next_job(ctx, task_key, under_way, task):
        return False
    ctx.append_event(UserTaskIntent.CANCELED, cancelled, task_key)
    return True
