"""What a job worker runs: task functions, the jobs they get, and the answer each outcome
becomes (COMPLETE, FAIL with one retry less and a back-off, or THROW_ERROR)."""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from partita.client import commands
from partita.client.commands import Request
from partita.protocol.values import JobValue

_LOG = logging.getLogger("partita.jobworker")


class BpmnError(Exception):
    """Raise from a task to throw a BPMN error with `code` (caught by an error event, or an
    incident naming the code when nothing catches it). `variables` go with the error."""

    def __init__(
        self, code: str, message: str = "", variables: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message or code)
        self.code = code
        self.message = message
        self.variables = variables


@dataclass(frozen=True, slots=True)
class ActivatedJob:
    key: int
    type: str
    variables: dict[str, Any]
    custom_headers: dict[str, str]
    retries: int
    deadline: int
    process_instance_key: int
    bpmn_process_id: str
    element_id: str
    element_instance_key: int

    @classmethod
    def of(cls, key: int, job: JobValue) -> ActivatedJob:
        return cls(
            key=key,
            type=job.type,
            variables=json.loads(job.variables or "{}"),
            custom_headers=dict(job.custom_headers),
            retries=job.retries,
            deadline=job.deadline,
            process_instance_key=job.process_instance_key,
            bpmn_process_id=job.bpmn_process_id,
            element_id=job.element_id,
            element_instance_key=job.element_instance_key,
        )


TaskFunction = Callable[..., dict[str, Any] | None]


@dataclass(slots=True)
class Task:
    """A registered task function. It receives the job's variables as keyword arguments (only
    those it names, or all with `**variables`; a parameter named `job` gets the ActivatedJob)."""

    job_type: str
    function: TaskFunction
    timeout_ms: int
    max_jobs: int
    retry_backoff_ms: int
    names: frozenset[str] = frozenset()
    takes_all: bool = False
    takes_job: bool = False

    def __post_init__(self) -> None:
        parameters = inspect.signature(self.function).parameters.values()
        self.takes_all = any(p.kind is p.VAR_KEYWORD for p in parameters)
        self.takes_job = any(p.name == "job" for p in parameters)
        self.names = frozenset(
            p.name
            for p in parameters
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "job"
        )

    def call(self, job: ActivatedJob) -> dict[str, Any] | None:
        if self.takes_all:
            arguments = dict(job.variables)
        else:
            arguments = {k: v for k, v in job.variables.items() if k in self.names}
        if self.takes_job:
            arguments["job"] = job
        return self.function(**arguments)


Outcome = tuple[str, Request]
"""("completed" | "failed" | "errors_thrown", the answer to send)."""


def run_task(task: Task, job: ActivatedJob) -> Outcome:
    """Run the task and turn what happened into the job's answer. Never raises for what the
    task function does (an exception, or variables that are no JSON document): that is the
    job's outcome, not the worker's, and a worker whose answer is lost would leave the job's
    offset uncommitted."""
    try:
        variables = task.call(job)
    except BpmnError as error:
        try:
            return "errors_thrown", commands.throw_error(
                job.key, error.code, error.message, error.variables
            )
        except (TypeError, ValueError) as exc:
            return _failed(task, job, f"BpmnError {error.code!r} with variables", exc)
    except Exception as exc:  # any failure of user code fails the job
        _LOG.warning("job %d of type %s failed: %s", job.key, job.type, exc)
        return _failed(task, job, "", exc, backoff=True)
    if variables is not None and not isinstance(variables, dict):
        message = f"task {task.function.__name__} returned {type(variables).__name__}, not a dict"
        return "failed", commands.fail_job(job.key, max(job.retries - 1, 0), message)
    try:
        return "completed", commands.complete_job(job.key, variables)
    except (TypeError, ValueError) as exc:
        return _failed(task, job, f"task {task.function.__name__} returned variables", exc)


def _failed(
    task: Task, job: ActivatedJob, what: str, exc: Exception, *, backoff: bool = False
) -> Outcome:
    """FAIL with one retry less: the task raised `exc`, or `what` could not be sent (`exc`
    says why, e.g. a value that is no JSON)."""
    try:
        detail = f"{type(exc).__name__}: {exc}"
    except Exception:  # a __str__ that raises
        detail = type(exc).__name__
    message = (f"{what} that cannot be sent: {detail}" if what else detail)[:4000]
    if what:
        _LOG.warning("job %d of type %s failed: %s", job.key, job.type, message)
    retry_backoff = task.retry_backoff_ms if backoff else 0
    return "failed", commands.fail_job(job.key, max(job.retries - 1, 0), message, retry_backoff)
