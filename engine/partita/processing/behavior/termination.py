"""Terminating element instances: PROCESS_INSTANCE CANCEL, interrupting events, terminate end
events and met completion conditions end what runs before it completes."""

from __future__ import annotations

from partita import __version__
from partita.processing.behavior.compensations import delete_subscriptions
from partita.processing.behavior.results import reject_later
from partita.processing.behavior.subscriptions import close_events
from partita.processing.context import ProcessingContext
from partita.processing.instance import state as instance_state
from partita.processing.job.state import JOBS, job_value
from partita.processing.user_task import state as user_task_state
from partita.protocol.enums import BpmnElementType, RecordType, RejectionType, ValueType
from partita.protocol.intents import JobIntent, ProcessInstanceCreationIntent, UserTaskIntent
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.records import Record
from partita.protocol.values import ProcessInstanceCreationValue
from partita.state.stored import ElementInstance

_SCOPES = {
    BpmnElementType.SUB_PROCESS,
    BpmnElementType.EVENT_SUB_PROCESS,
    BpmnElementType.AD_HOC_SUB_PROCESS,
    BpmnElementType.MULTI_INSTANCE_BODY,
}
"""What compensation subscriptions can be scoped to, beside the process."""


def terminate_element(
    ctx: ProcessingContext, key: int, stored: ElementInstance, *, respond: bool = False
) -> None:
    """Terminate element instance `key` and what runs in it, depth-first: TERMINATING, the
    children, the element's job or user task, its events, a called instance, TERMINATED.
    `respond` makes TERMINATING the command's reply. A client awaiting the instance's result
    is answered with a rejection: it ended without one."""
    value = instance_state.value_of(stored)
    ctx.append_event(Instance.ELEMENT_TERMINATING, value, key, respond=respond)
    for child in instance_state.children(ctx.state, key):
        child_stored = instance_state.instance(ctx.state, child)
        if child_stored is not None:
            terminate_element(ctx, child, child_stored)
    job_key = stored.job_key
    job = ctx.state.column(JOBS).get(job_key) if job_key > 0 else None
    if job is not None:
        ctx.append_event(JobIntent.CANCELED, job_value(job), job_key)
    task_key = stored.user_task_key
    task = user_task_state.task(ctx.state, task_key) if task_key > 0 else None
    if task is not None:
        cancelled = user_task_state.task_value(task_key, task)
        ctx.append_event(UserTaskIntent.CANCELING, cancelled, task_key)
        ctx.append_event(UserTaskIntent.CANCELED, cancelled, task_key)
        reason = "user task was canceled during ongoing transition"
        reject_later(ctx, task_key, UserTaskIntent.COMPLETE, cancelled, reason)
    close_events(ctx, key)
    if stored.element_type is BpmnElementType.PROCESS:
        delete_subscriptions(ctx, key)
    elif stored.element_type in _SCOPES:
        delete_subscriptions(ctx, stored.process_instance_key, key)
    called_key = stored.called_child_key
    called = instance_state.instance(ctx.state, called_key) if called_key > 0 else None
    if called is not None:  # a call activity: its child instance goes with it
        terminate_element(ctx, called_key, called)
    ctx.append_event(Instance.ELEMENT_TERMINATED, value, key)
    waiting = ctx.awaiting.pop(key)
    if waiting is not None:  # the awaited instance ended without a result
        request = ProcessInstanceCreationValue(
            bpmn_process_id=value.bpmn_process_id,
            version=value.version,
            process_definition_key=value.process_definition_key,
            process_instance_key=key,
        )
        rejection = Record(
            RecordType.COMMAND_REJECTION,
            ValueType.PROCESS_INSTANCE_CREATION,
            ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT,
            request,
            key,
            ctx.partition_id,
            timestamp=ctx.now,
            rejection_type=RejectionType.INVALID_STATE,
            rejection_reason=f"process instance {key} was terminated before it completed",
            engine_version=__version__,
        )
        ctx.output.replies.append((waiting.reply_to, rejection))
