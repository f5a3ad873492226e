"""Replies sent after their command: the result of a process instance created with
CREATE_WITH_AWAITING_RESULT, sent when the instance completes (a terminated one is answered by
`termination` with a rejection), and the answer to a user task command that waited for the
task listeners of its transition (`answer_later`, `reject_later`)."""

from __future__ import annotations

from typing import Any

from partita import __version__
from partita.processing.context import ProcessingContext
from partita.protocol import json_text
from partita.protocol.enums import RecordType, RejectionType, ValueType
from partita.protocol.intents import Intent, ProcessInstanceResultIntent
from partita.protocol.records import Record
from partita.protocol.values import ProcessInstanceResultValue, ProcessInstanceValue, RecordValue


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
        variables=json_text.write(variables),
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


def answer_later(ctx: ProcessingContext, key: int, record: Record) -> None:
    """Answer the request that waits for `key` (a user task's transition) with `record`."""
    waiting = ctx.awaiting.pop(key)
    if waiting is not None:
        ctx.output.replies.append((waiting.reply_to, record))


def reject_later(
    ctx: ProcessingContext, key: int, intent: Intent, value: RecordValue, reason: str
) -> None:
    """Answer the request that waits for `key` with an INVALID_STATE rejection of `intent`."""
    waiting = ctx.awaiting.pop(key)
    if waiting is None:
        return
    rejection = Record(
        RecordType.COMMAND_REJECTION,
        ValueType.USER_TASK,
        intent,
        value,
        key,
        ctx.partition_id,
        ctx.command.position if ctx.command is not None else -1,
        ctx.now,
        RejectionType.INVALID_STATE,
        reason,
        __version__,
    )
    ctx.output.replies.append((waiting.reply_to, rejection))
