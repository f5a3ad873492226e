"""The asyncio client: the same commands as `Client`, awaited.

    async with await AsyncClient.connect(config) as client:
        await client.deploy(Path("order.bpmn"))
        done = await client.create_instance("order", {"amount": 42}, await_result=True)

Commands are produced from the event loop (producing only queues them); one background thread
reads the reply partition and resolves the future of each reply on the loop. Many requests can
be in flight at once (`asyncio.gather`). Rejections raise the `CommandRejectedError` subclass
of their type, and a missing reply `ReplyTimeoutError`, as with `Client`; RESOURCE_EXHAUSTED
(backpressure) is retried with back-off for up to `retry_for` seconds first, as with `Client`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from partita.client import commands
from partita.client.commands import Request
from partita.client.connection import Connection
from partita.client.errors import ResourceExhaustedError, rejection_error, timeout_error
from partita.client.retry import RetryPolicy, is_backpressure
from partita.config import Config, KafkaRole
from partita.protocol.enums import RecordType
from partita.protocol.records import Record
from partita.protocol.values import JobBatchValue, JobValue


class AsyncClient:
    def __init__(self, connection: Connection, timeout: float, retry_for: float = 30.0) -> None:
        """Use `await AsyncClient.connect(config)`."""
        self.connection = connection
        self.config = connection.config
        self.timeout = timeout
        self.retry = RetryPolicy(retry_for=retry_for)
        """Back-off for RESOURCE_EXHAUSTED rejections; replace it to tune more than `retry_for`."""
        self._loop = asyncio.get_running_loop()
        self._waiting: dict[bytes, asyncio.Future[Record]] = {}
        self._closing = threading.Event()
        self._reader = threading.Thread(
            target=self._read_replies, name="partita-replies", daemon=True
        )
        self._reader.start()

    @classmethod
    async def connect(
        cls,
        config: Config,
        *,
        timeout: float = 30.0,
        retry_for: float = 30.0,
        role: KafkaRole = KafkaRole.CLIENT,
    ) -> AsyncClient:
        """Connects as `role`: PARTITA_KAFKA_CONFIG_<ROLE> gives it its own principal."""
        connection = await asyncio.to_thread(Connection, config, timeout, role=role)
        return cls(connection, timeout, retry_for)

    async def close(self) -> None:
        self._closing.set()
        await asyncio.to_thread(self._reader.join)
        await asyncio.to_thread(self.connection.close)
        for future in self._waiting.values():
            future.cancel()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    def _read_replies(self) -> None:
        """The reply thread: the only user of the reply consumer."""
        while not self._closing.is_set():
            self.connection.producer.poll(0)
            replies = self.connection.replies(0.1)
            if replies:
                self._loop.call_soon_threadsafe(self._resolve, replies)

    def _resolve(self, replies: list[tuple[bytes, Record]]) -> None:
        for correlation, record in replies:
            future = self._waiting.pop(correlation, None)
            if future is not None and not future.done():
                future.set_result(record)

    async def request(self, request: Request, timeout: float | None = None) -> Record:
        """Send a command and await its result; raises on a rejection. A RESOURCE_EXHAUSTED
        rejection is not raised until the command was sent again for `retry.retry_for`
        seconds; `timeout` bounds each wait for a reply, not the retries."""
        backoff = self.retry.start()
        while True:
            result = await self._send(request, timeout)
            if is_backpressure(result):
                delay = backoff.next_delay()
                if delay is None:
                    raise ResourceExhaustedError(result, backoff.attempts, backoff.waited)
                await asyncio.sleep(delay)
                continue
            if result.record_type is RecordType.COMMAND_REJECTION:
                raise rejection_error(result)
            return result

    async def _send(self, request: Request, timeout: float | None) -> Record:
        """Send the command once and await its reply, whatever it is."""
        correlation = self.connection.produce(request)
        future: asyncio.Future[Record] = self._loop.create_future()
        self._waiting[correlation] = future  # before any await: the reply cannot pass us by
        timeout = timeout or self.timeout
        try:
            # not wait_for: on Python 3.11 it swallows a cancellation that comes as the reply
            # does, and a gateway request whose client left would go on as if it had stayed
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            raise timeout_error(timeout, self.config.namespace, self.config.bootstrap) from None
        finally:
            self._waiting.pop(correlation, None)

    # -- commands (see Client for what each reply holds) -------------------------------------

    async def deploy(self, *resources: Path | tuple[str, bytes]) -> Record:
        return await self.request(commands.deploy(resources))

    async def create_instance(
        self,
        bpmn_process_id: str,
        variables: dict[str, Any] | None = None,
        *,
        version: int = -1,
        await_result: bool = False,
        fetch_variables: Sequence[str] = (),
        timeout: float | None = None,
    ) -> Record:
        request = commands.create_instance(
            bpmn_process_id,
            variables,
            version=version,
            await_result=await_result,
            fetch_variables=fetch_variables,
        )
        return await self.request(request, timeout)

    async def cancel_instance(self, key: int) -> Record:
        return await self.request(commands.cancel_instance(key))

    async def activate_jobs(
        self, job_type: str, worker: str = "client", max_jobs: int = 32, timeout_ms: int = 300_000
    ) -> tuple[tuple[int, JobValue], ...]:
        requests = [
            self.request(commands.activate_jobs(job_type, p, worker, max_jobs, timeout_ms))
            for p in range(self.connection.partition_count)
        ]
        activated: list[tuple[int, JobValue]] = []
        for reply in await asyncio.gather(*requests):
            value = reply.value
            assert isinstance(value, JobBatchValue)
            activated += zip(value.job_keys, value.jobs, strict=True)
        return tuple(activated)

    async def complete_job(self, key: int, variables: dict[str, Any] | None = None) -> Record:
        return await self.request(commands.complete_job(key, variables))

    async def fail_job(
        self,
        key: int,
        retries: int,
        message: str = "",
        backoff_ms: int = 0,
        variables: dict[str, Any] | None = None,
    ) -> Record:
        return await self.request(commands.fail_job(key, retries, message, backoff_ms, variables))

    async def throw_error(
        self, key: int, code: str, message: str = "", variables: dict[str, Any] | None = None
    ) -> Record:
        return await self.request(commands.throw_error(key, code, message, variables))

    async def update_job_retries(self, key: int, retries: int) -> Record:
        return await self.request(commands.update_job_retries(key, retries))

    async def update_job_timeout(self, key: int, timeout_ms: int) -> Record:
        return await self.request(commands.update_job_timeout(key, timeout_ms))

    async def yield_job(self, key: int) -> Record:
        return await self.request(commands.yield_job(key))

    async def assign_user_task(self, key: int, assignee: str, *, action: str = "") -> Record:
        """Assign a user task (replacing any assignee; "" unassigns): USER_TASK ASSIGNED."""
        return await self.request(commands.assign_user_task(key, assignee, action=action))

    async def claim_user_task(self, key: int, assignee: str) -> Record:
        """Assign a user task unless someone else has it."""
        return await self.request(commands.claim_user_task(key, assignee))

    async def update_user_task(self, key: int, **attributes: Any) -> Record:
        """Change a user task's candidates, dates or priority (`commands.update_user_task`)."""
        return await self.request(commands.update_user_task(key, **attributes))

    async def complete_user_task(
        self, key: int, variables: dict[str, Any] | None = None, *, action: str = ""
    ) -> Record:
        """Complete a user task with variables: USER_TASK COMPLETED, and the task's element."""
        return await self.request(commands.complete_user_task(key, variables, action=action))

    async def evaluate_decision(
        self,
        decision_id: str = "",
        variables: dict[str, Any] | None = None,
        *,
        decision_key: int = -1,
    ) -> Record:
        """Evaluate a deployed decision (by id: its latest version; or by key): DECISION_EVALUATION
        EVALUATED with the output and audit, or FAILED with the reason."""
        request = commands.evaluate_decision(decision_id, variables, decision_key=decision_key)
        return await self.request(request)

    async def broadcast_signal(self, name: str, variables: dict[str, Any] | None = None) -> Record:
        """Broadcast a signal: what waits for it on any partition catches it (BROADCASTED)."""
        return await self.request(commands.broadcast_signal(name, variables))

    async def publish_message(
        self,
        name: str,
        correlation_key: str,
        variables: dict[str, Any] | None = None,
        *,
        ttl_ms: int = -1,
        message_id: str = "",
        timeout: float | None = None,
    ) -> Record:
        request = commands.publish_message(
            name, correlation_key, variables, ttl_ms=ttl_ms, message_id=message_id
        )
        return await self.request(request, timeout)

    async def set_variables(
        self, scope_key: int, variables: dict[str, Any], *, local: bool = False
    ) -> Record:
        return await self.request(commands.set_variables(scope_key, variables, local=local))

    async def resolve_incident(self, key: int) -> Record:
        return await self.request(commands.resolve_incident(key))
