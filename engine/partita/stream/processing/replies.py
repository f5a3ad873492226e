"""Where the engine may answer: the reply allow-list.

A request names its reply address in Spring Kafka's headers; the engine writes there inside
the transaction of its batch. An address outside the allow-list, or one Kafka would refuse (a
topic that does not exist, a partition past the topic's count), would abort that transaction
and so stall the partition: such replies are dropped before anything is produced, counted,
and logged at a bounded rate. The log, ingress, snapshot and job topics of every namespace are
never allowed (`partita.config.is_engine_topic`), whatever the configuration says.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping

from partita.config import is_engine_topic
from partita.protocol.headers import ReplyTo

_LOG = logging.getLogger("partita.replies")
_LOG_EVERY_S = 5.0


class ReplyRoutes:
    """The allowed reply topics and their partition counts, as the cluster's metadata last
    said (`update`). Shared by the partition tasks of one worker, whose batches run in threads
    side by side: `update` runs between batches, `drop` counts under a lock."""

    def __init__(self, allowed: frozenset[str]) -> None:
        self.allowed = frozenset(topic for topic in allowed if not is_engine_topic(topic))
        self.partitions: dict[str, int] = {}
        self.dropped = 0
        self._logged_at = 0.0
        self._unlogged = 0
        self._lock = threading.Lock()

    def update(self, partition_counts: Mapping[str, int]) -> None:
        """Take the partition counts of the allowed topics from a metadata listing."""
        self.partitions = {
            topic: count for topic, count in partition_counts.items() if topic in self.allowed
        }

    def refusal(self, address: ReplyTo) -> str | None:
        """Why a reply to `address` cannot be written, or None when it can."""
        count = self.partitions.get(address.topic)
        if count is None:
            if address.topic in self.allowed:
                return f"reply topic {address.topic!r} does not exist (create it first)"
            return (
                f"reply topic {address.topic!r} is not allowed (allowed:"
                f" {', '.join(sorted(self.allowed))}; see PARTITA_REPLY_TOPICS)"
            )
        if address.partition is not None and not 0 <= address.partition < count:
            return (
                f"reply partition {address.partition} is outside {address.topic!r} (0..{count - 1})"
            )
        return None

    def drop(self, partition: int, address: ReplyTo, reason: str) -> None:
        """Count a reply that will not be written; log it, at most every few seconds."""
        with self._lock:
            self.dropped += 1
            now = time.monotonic()
            if now - self._logged_at < _LOG_EVERY_S:
                self._unlogged += 1
                return
            also = f" (and {self._unlogged} more since the last report)" if self._unlogged else ""
            self._logged_at, self._unlogged = now, 0
        _LOG.warning(
            "partition %d: dropped the reply with correlation id %r: %s%s",
            partition,
            address.correlation_id[:64],
            reason,
            also,
        )
