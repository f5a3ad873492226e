"""Ending element instances early: PROCESS_INSTANCE CANCEL, interrupting events, terminate end
events; and the reply to a CREATE_WITH_AWAITING_RESULT request when its instance ends."""

from __future__ import annotations

import json
from typing import Any

from engine import __version__
from engine.processing import events, instances
from engine.processing.context import ProcessingContext, RejectionError
from engine.processing.job.state import JOBS, job_value
from engine.protocol.enums import RecordType, RejectionType, ValueType
from engine.protocol.intents import (
    JobIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceResultIntent,
)
from engine.protocol.intents import ProcessInstanceIntent as Instance
from engine.protocol.records import Record
from engine.protocol.values import (
    ProcessInstanceCreationValue,
    ProcessInstanceResultValue,
    ProcessInstanceValue,
)


def answer_awaiting(
    ctx: ProcessingContext, key: int, value: ProcessInstanceValue, variables: dict[str, Any]
) -> None:
    """Reply PROCESS_INSTANCE_RESULT COMPLETED to a CREATE_WITH_AWAITING_RESULT request."""
    waiting = ctx.awaiting.pop(key)
    if waiting is None:
        return
    reply_to, fetch = waiting.reply_to, waiting.fetch_variables
    if fetch:
        variables = {name: variables[name] for name in fetch if name in variables}
    result = ProcessInstanceResultValue(
        bpmn_process_id=value.bpmn_process_id,
        version=value.version,
        process_definition_key=value.process_definition_key,
        process_instance_key=key,
        variables=json.dumps(variables, separators=(",", ":"), ensure_ascii=False),
    )
    record = Record(
        RecordType.EVENT,
        ValueType.PROCESS_INSTANCE_RESULT,
        ProcessInstanceResultIntent.COMPLETED,
        result,
        key,
        ctx.partition_id,
        ctx.command.position if ctx.command is not None else -1,
        ctx.now,
        engine_version=__version__,
    )
    ctx.output.replies.append((reply_to, record))


def cancel(command: Record, ctx: ProcessingContext) -> None:
    """PROCESS_INSTANCE CANCEL: terminate the instance and everything active in it."""
    stored = instances.instance(ctx.state, command.key)
    if stored is None or stored["flowScopeKey"] > 0:
        raise RejectionError(
            RejectionType.NOT_FOUND, f"no active process instance with key {command.key}"
        )
    if stored["state"] == Instance.ELEMENT_TERMINATING.name:
        raise RejectionError(
            RejectionType.INVALID_STATE, f"process instance {command.key} is already terminating"
        )
    if stored.get("parentElementInstanceKey", -1) > 0:
        raise RejectionError(
            RejectionType.INVALID_STATE,
            f"process instance {command.key} was started by call activity instance"
            f" {stored['parentElementInstanceKey']}; cancel its root process instance"
            f" {stored['parentProcessInstanceKey']} instead",
        )
    _terminate(ctx, command.key, stored, respond=True)


def terminate_element(ctx: ProcessingContext, key: int, stored: dict[str, Any]) -> None:
    """Terminate element instance `key` and what runs in it (an interrupting event)."""
    _terminate(ctx, key, stored)


def _terminate(
    ctx: ProcessingContext, key: int, stored: dict[str, Any], *, respond: bool = False
) -> None:
    """Depth-first: TERMINATING, the children, the element's job, TERMINATED."""
    value = instances.value_of(stored)
    ctx.append_event(Instance.ELEMENT_TERMINATING, value, key, respond=respond)
    for child in instances.children(ctx.state, key):
        child_stored = instances.instance(ctx.state, child)
        if child_stored is not None:
            _terminate(ctx, child, child_stored)
    job_key = stored.get("jobKey", -1)
    job = ctx.state.column(JOBS).get(job_key) if job_key > 0 else None
    if job is not None:
        ctx.append_event(JobIntent.CANCELED, job_value(job), job_key)
    events.close_events(ctx, key)
    called_key = stored.get("calledChildKey", -1)
    called = instances.instance(ctx.state, called_key) if called_key > 0 else None
    if called is not None:  # a call activity: its child instance goes with it
        _terminate(ctx, called_key, called)
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
