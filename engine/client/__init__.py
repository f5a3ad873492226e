"""The Python client: commands to the engine with replies (request/response over Kafka),
synchronous (`Client`) and asyncio (`AsyncClient`), and job workers in the decorator style."""

from engine.client.aio import AsyncClient
from engine.client.client import Client
from engine.client.errors import (
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
from engine.client.worker import ActivatedJob, BpmnError, JobWorker, WorkerStats

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
