"""The Python client: commands to the engine with replies (request/response over Kafka),
synchronous (`Client`) and asyncio (`AsyncClient`), and job workers in the decorator style."""

from partita.client.aio import AsyncClient
from partita.client.client import Client
from partita.client.errors import (
    AlreadyExistsError,
    BatchTooLargeError,
    CommandRejectedError,
    InvalidArgumentError,
    InvalidStateError,
    NotFoundError,
    ProcessingError,
    ReplyTimeoutError,
    ResourceExhaustedError,
)
from partita.client.worker import ActivatedJob, BpmnError, JobWorker, WorkerStats

__all__ = [
    "ActivatedJob",
    "AlreadyExistsError",
    "AsyncClient",
    "BatchTooLargeError",
    "BpmnError",
    "Client",
    "CommandRejectedError",
    "InvalidArgumentError",
    "InvalidStateError",
    "JobWorker",
    "NotFoundError",
    "ProcessingError",
    "ReplyTimeoutError",
    "ResourceExhaustedError",
    "WorkerStats",
]
