"""The job as a worker receives it, polled (JOB_BATCH ACTIVATE) or pushed: with the variables
visible to its task, or, when those are too large for one record, failed with an incident."""

from __future__ import annotations

from msgspec.structs import replace

from partita.processing.behavior.incidents import job_incident
from partita.processing.context import ProcessingContext
from partita.processing.job.state import JOBS, job_value
from partita.processing.variable.state import visible_variables_json
from partita.protocol.enums import ErrorType
from partita.protocol.intents import JobIntent
from partita.protocol.values import JobValue

MAX_JOB_VARIABLES_BYTES = 3 * 1024 * 1024
"""The variables one activated job may carry: with the job's other fields and the record's
envelope it must fit in one log record (partita.protocol.codec.DEFAULT_MAX_RECORD_BYTES)."""


def activated_job(ctx: ProcessingContext, key: int, worker: str, deadline: int) -> JobValue | None:
    """The job as a worker receives it: with the variables visible to its task. None when
    those variables are too large to send: the job then fails with no retries and a
    MESSAGE_SIZE_EXCEEDED incident (as in Zeebe) instead of blocking its type. Shrinking the
    variables, updating the retries and resolving the incident activates it again."""
    stored = ctx.state.column(JOBS).get(key)
    assert stored is not None
    encoded = visible_variables_json(ctx.state, stored.element_instance_key)
    size = len(encoded) if len(encoded) * 4 <= MAX_JOB_VARIABLES_BYTES else len(encoded.encode())
    if size > MAX_JOB_VARIABLES_BYTES:
        _fail_too_large(ctx, key, job_value(stored), size)
        return None
    return replace(job_value(stored), worker=worker, deadline=deadline, variables=encoded)


def _fail_too_large(ctx: ProcessingContext, key: int, job: JobValue, size: int) -> None:
    message = (
        f"job {key} cannot be activated: the variables visible to element {job.element_id!r}"
        f" are {size} bytes, over the limit of {MAX_JOB_VARIABLES_BYTES} for one job. Make them"
        " smaller (e.g. keep large payloads outside the process and pass references), then"
        " update the job's retries and resolve this incident"
    )
    failed = replace(job, retries=0, error_message=message, variables="{}")
    ctx.append_event(JobIntent.FAILED, failed, key)
    job_incident(ctx, key, failed, ErrorType.MESSAGE_SIZE_EXCEEDED, message)
