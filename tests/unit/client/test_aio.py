"""The asyncio client under cancellation: a request cancelled by its caller ends cancelled, even
when its reply arrives in the same turn of the loop (Python 3.11's `wait_for` would return the
reply and lose the cancellation: a gateway request whose client left would go on waiting for
jobs nobody takes), and leaves nothing behind. No Kafka: the connection never answers by
itself; the test hands the reply over."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from partita.client import aio, commands
from partita.client.commands import Request
from partita.client.errors import ReplyTimeoutError
from partita.config import Config
from partita.protocol.enums import ValueType
from partita.protocol.records import Record
from tests.support.sample_records import sample_record

REPLY = sample_record(ValueType.PROCESS_INSTANCE_CREATION)


class QuietConnection:
    """Takes commands and never answers: the test resolves replies itself."""

    def __init__(self) -> None:
        self.config = Config()
        self.producer = self
        self.partition_count = 1
        self.sent: list[bytes] = []

    def produce(self, request: Request, **_: Any) -> bytes:
        self.sent.append(str(len(self.sent)).encode())
        return self.sent[-1]

    def replies(self, timeout: float) -> list[tuple[bytes, Record]]:
        time.sleep(0.001)
        return []

    def poll(self, timeout: float = 0) -> int:
        return 0

    def close(self) -> None:
        pass


def run(body: Any) -> Any:
    async def main() -> Any:
        connection = QuietConnection()
        client = aio.AsyncClient(connection, timeout=5.0)  # type: ignore[arg-type]
        try:
            return await body(client, connection)
        finally:
            await client.close()

    return asyncio.run(main())


def test_a_request_cancelled_as_its_reply_arrives_ends_cancelled() -> None:
    async def body(client: aio.AsyncClient, connection: QuietConnection) -> None:
        request = asyncio.create_task(client.create_instance("order"))
        await asyncio.sleep(0)  # the command is sent; the request waits for its reply
        client._resolve([(connection.sent[0], REPLY)])
        request.cancel()
        with pytest.raises(asyncio.CancelledError):
            await request
        assert client._waiting == {}

    run(body)


def test_a_cancelled_request_leaves_no_reply_waiting() -> None:
    async def body(client: aio.AsyncClient, connection: QuietConnection) -> None:
        request = asyncio.create_task(client.create_instance("order"))
        await asyncio.sleep(0)
        assert len(client._waiting) == 1
        request.cancel()
        with pytest.raises(asyncio.CancelledError):
            await request
        assert client._waiting == {}

    run(body)


def test_a_reply_that_does_not_come_in_time_raises_and_leaves_nothing_waiting() -> None:
    async def body(client: aio.AsyncClient, connection: QuietConnection) -> None:
        with pytest.raises(ReplyTimeoutError):
            await client.request(commands.create_instance("order", None), timeout=0.05)
        assert client._waiting == {}

    run(body)
