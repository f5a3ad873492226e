"""Push activation: jobs produced to `<ns>.jobs.<type>` in the transaction that activates them.

A job type is pushed while its job topic exists and its workers' consumer group
`<ns>.workers.<type>` has members (the worker checks both every few seconds and keeps
`JobPush.topics` current), as Zeebe pushes only while a job stream is open: otherwise its jobs
stay activatable for ActivateJobs. Whenever a command changes a job of a pushed type (created,
failed with retries, timed out, recurred, completed, cancelled), the partition activates
activatable jobs of that type, oldest first, while fewer than `limit` pushed jobs of the type
are unfinished: one JOB_BATCH ACTIVATED event per job (worker `partita.push`, deadline now +
`timeout_ms`), and the same record on the job topic, keyed by the job key. A pushed job whose
deadline passes times out like a polled one and is pushed again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from msgspec.structs import replace

from partita.config import Config
from partita.config.settings import JOB_PUSH_LIMIT, JOB_PUSH_TIMEOUT_MS
from partita.processing.context import ProcessingContext
from partita.processing.dispatch import Handlers
from partita.processing.job.activation import activated_job
from partita.processing.job.state import (
    ACTIVATABLE,
    DEADLINES,
    JOBS,
    activatable_count,
    job_value,
    pushed_count,
)
from partita.protocol.enums import RecordType, ValueType
from partita.protocol.intents import JobBatchIntent, JobIntent
from partita.protocol.records import Record
from partita.protocol.values import PUSH_WORKER, JobBatchValue

handlers = Handlers()

DEFAULT_LIMIT: int = JOB_PUSH_LIMIT.default
DEFAULT_TIMEOUT_MS: int = JOB_PUSH_TIMEOUT_MS.default


@handlers.topic_hook
@dataclass(slots=True)
class JobPush:
    """The job types this worker pushes and how: the engine's TopicHook for `<ns>.jobs.*`.
    `topics` maps a job type to its topic and that topic's partition count; the worker keeps
    it current from the cluster's metadata (`topics_found`)."""

    topics: dict[str, tuple[str, int]] = field(default_factory=dict)
    limit: int = DEFAULT_LIMIT
    """Pushed, unfinished jobs per type and partition; the flow control of push."""
    timeout_ms: int = DEFAULT_TIMEOUT_MS

    def configure(self, config: Config) -> None:
        self.limit = config.job_push_limit
        self.timeout_ms = config.job_push_timeout_ms

    def topic_prefix(self, namespace: str) -> str:
        return f"{namespace}.jobs."

    def readers(self, topic: str) -> str | None:
        """`<ns>.jobs.<type>` is pushed to while `<ns>.workers.<type>` has members: a type
        whose workers all poll (or none run) keeps its jobs activatable for ActivateJobs."""
        namespace, _, job_type = topic.partition(".jobs.")
        return f"{namespace}.workers.{job_type}" if job_type else None

    def topics_found(self, topics: Mapping[str, int]) -> list[str]:
        """Job topics that exist and are read now; returns the job types whose push starts or
        stops, for `catch_up`."""
        found: dict[str, tuple[str, int]] = {}
        for name, partitions in topics.items():
            job_type = name.split(".jobs.", 1)[1] if ".jobs." in name else ""
            if job_type:
                found[job_type] = (name, partitions)
        changed = sorted(set(found) ^ set(self.topics))
        self.topics.clear()
        self.topics.update(found)
        return changed

    def bind(self, ctx: ProcessingContext) -> None:
        ctx.hooks[JobPush] = self

    def catch_up(self, ctx: ProcessingContext, names: Sequence[str], now: int) -> None:
        """For a type now pushed: push the jobs that were activatable before its workers came.
        For a type no longer pushed (its workers all left): give its pushed, unfinished jobs
        back (JOB YIELDED), since whatever the topic still holds has no reader; pollers take
        them at once instead of after their deadline."""
        trigger = Record(
            RecordType.COMMAND, ValueType.JOB_BATCH, JobBatchIntent.ACTIVATE, JobBatchValue()
        )
        ctx.begin(trigger, None, now)
        for job_type in names:
            if job_type in self.topics:
                push(ctx, job_type)
            else:
                release(ctx, job_type)


def push(ctx: ProcessingContext, job_type: str) -> int:
    """Push activatable jobs of `job_type` up to the bound; returns how many."""
    settings = ctx.hook(JobPush)
    assert settings is not None
    target = settings.topics.get(job_type)
    if target is None:
        return 0
    free = settings.limit - pushed_count(ctx.state, job_type)
    if free <= 0 or not activatable_count(ctx.state, job_type):
        return 0
    keys = []
    for (_, key), _unused in ctx.state.column(ACTIVATABLE).items(ACTIVATABLE.key.prefix(job_type)):
        keys.append(key)
        if len(keys) >= free:
            break
    topic, partitions = target
    deadline = ctx.now + settings.timeout_ms
    pushed = 0
    for key in keys:
        job = activated_job(ctx, key, PUSH_WORKER, deadline)
        if job is None:
            continue
        pushed += 1
        batch = JobBatchValue(
            type=job_type,
            worker=PUSH_WORKER,
            timeout=settings.timeout_ms,
            max_jobs_to_activate=1,
            job_keys=(key,),
            jobs=(job,),
        )
        event = ctx.append_event(JobBatchIntent.ACTIVATED, batch, ctx.keys.next_key())
        ctx.output.pushed.append((topic, ctx.partition % partitions, key, event))
    return pushed


def release(ctx: ProcessingContext, job_type: str) -> None:
    """Every pushed, unfinished job of `job_type` activatable again (JOB YIELDED)."""
    if not pushed_count(ctx.state, job_type):
        return
    keys = []
    for (_, key), _unused in ctx.state.column(DEADLINES).items():
        stored = ctx.state.column(JOBS).get(key)
        if stored is not None and stored.pushed and stored.type == job_type:
            keys.append(key)
    for key in keys:
        stored = ctx.state.column(JOBS).get(key)
        assert stored is not None
        given_back = replace(job_value(stored), worker="", deadline=-1)
        ctx.append_event(JobIntent.YIELDED, given_back, key)


@handlers.after_command
def after_command(_command: Record, ctx: ProcessingContext) -> None:
    """Runs after every command: push for the job types the command touched."""
    if not ctx.touched_job_types or ctx.hook(JobPush) is None:
        return
    touched = sorted(ctx.touched_job_types)
    ctx.touched_job_types.clear()
    for job_type in touched:
        push(ctx, job_type)
