"""The Python client: commands to the engine with replies (request/response over Kafka)."""

from engine.client.client import Client, CommandRejectedError, ReplyTimeoutError

__all__ = ["Client", "CommandRejectedError", "ReplyTimeoutError"]
