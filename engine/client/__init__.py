"""The Python client: commands to the engine with replies (request/response over Kafka), and
job workers in the decorator style."""

from engine.client.client import Client, CommandRejectedError, ReplyTimeoutError
from engine.client.worker import ActivatedJob, BpmnError, JobWorker, WorkerStats

__all__ = [
    "ActivatedJob",
    "BpmnError",
    "Client",
    "CommandRejectedError",
    "JobWorker",
    "ReplyTimeoutError",
    "WorkerStats",
]
