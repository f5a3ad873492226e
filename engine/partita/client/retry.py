"""When the clients send a command again: after a `RESOURCE_EXHAUSTED` rejection (backpressure).

A partition over its backpressure limit rejects new instances and messages without processing
them (docs/limits.md), so sending the same command again later is safe and is what Zeebe clients
do. `RetryPolicy` says for how long and how fast; `Backoff` is one command's progress through
it. Nothing here touches Kafka or sleeps: the synchronous and the asyncio client each wait
their own way (`time.sleep`, `asyncio.sleep`) for the delays it returns.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from partita.protocol.enums import RecordType, RejectionType
from partita.protocol.records import Record


def is_backpressure(reply: Record) -> bool:
    """True when `reply` is a rejection that only means "not now": RESOURCE_EXHAUSTED."""
    return (
        reply.record_type is RecordType.COMMAND_REJECTION
        and reply.rejection_type is RejectionType.RESOURCE_EXHAUSTED
    )


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential back-off with jitter, bounded in time.

    The n-th wait is drawn from [step/2, step] with step = `first_delay` * `multiplier`^(n-1),
    at most `max_delay`, so clients rejected together do not come back together. No wait ends
    later than `retry_for` seconds after the first send; `retry_for=0` never retries.
    """

    retry_for: float = 30.0
    first_delay: float = 0.05
    max_delay: float = 2.0
    multiplier: float = 2.0

    def __post_init__(self) -> None:
        if self.retry_for < 0 or self.first_delay <= 0 or self.max_delay < self.first_delay:
            raise ValueError(
                f"retry_for must be >= 0 and 0 < first_delay <= max_delay, got retry_for"
                f" {self.retry_for}, first_delay {self.first_delay}, max_delay {self.max_delay}"
            )
        if self.multiplier < 1:
            raise ValueError(f"multiplier must be at least 1, got {self.multiplier}")

    def start(
        self,
        clock: Callable[[], float] = time.monotonic,
        rng: Callable[[], float] = random.random,
    ) -> Backoff:
        """The back-off of one command, its clock started now (at its first send)."""
        return Backoff(self, clock, rng)


class Backoff:
    """One command's retries: call `next_delay` after each RESOURCE_EXHAUSTED rejection."""

    __slots__ = ("_clock", "_deadline", "_rng", "_started", "_step", "attempts", "policy")

    def __init__(
        self, policy: RetryPolicy, clock: Callable[[], float], rng: Callable[[], float]
    ) -> None:
        self.policy = policy
        self.attempts = 1
        """How many times the command has been sent, counting the first."""
        self._clock = clock
        self._rng = rng
        self._started = clock()
        self._deadline = self._started + policy.retry_for
        self._step = policy.first_delay

    @property
    def waited(self) -> float:
        """Seconds since the first send."""
        return self._clock() - self._started

    def next_delay(self) -> float | None:
        """Seconds to wait before sending the command again, or None when `retry_for` is spent
        (then raise). Counts the send that follows as an attempt."""
        remaining = self._deadline - self._clock()
        if remaining <= 0:
            return None
        delay = self._step * (0.5 + 0.5 * self._rng())
        self._step = min(self.policy.max_delay, self._step * self.policy.multiplier)
        self.attempts += 1
        return min(delay, remaining)
