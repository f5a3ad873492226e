"""Awaited results: where to answer a CREATE_WITH_AWAITING_RESULT request when its instance ends.

Kept in memory by the partition, as Zeebe keeps request metadata: after a failover the waiting
client times out and asks again. The map is bounded (`limit` entries; the oldest goes first)
and its entries expire after `ttl_ms`, so requests whose clients gave up long ago cannot pile
up. Every change is journaled: `rollback(mark)` undoes what a failed command attempt or an
aborted batch did, so a retried batch answers exactly the requests the committed one would.
"""

from __future__ import annotations

import logging
from itertools import islice

from msgspec import Struct

from partita.protocol.headers import ReplyTo

_LOG = logging.getLogger("partita.processing")

DEFAULT_LIMIT = 10_000
DEFAULT_TTL_MS = 600_000
"""Ten minutes: longer than any client waits for a result (the Python client's default
is 60 s; Zeebe's gateway requestTimeout is typically seconds to minutes)."""


class Awaited(Struct, frozen=True, gc=False):
    reply_to: ReplyTo
    fetch_variables: tuple[str, ...]
    since_ms: int


_ABSENT = object()


class AwaitedResults:
    """Process instance key -> the request awaiting its result."""

    def __init__(self, limit: int = DEFAULT_LIMIT, ttl_ms: int = DEFAULT_TTL_MS) -> None:
        self.limit = limit
        self.ttl_ms = ttl_ms
        self._entries: dict[int, Awaited] = {}
        self._journal: list[tuple[int, object]] = []
        """(key, the entry before the change, or _ABSENT) since the last `commit`."""
        self.evicted = 0
        """Requests dropped to stay within `limit` or past `ttl_ms` (their clients time out)."""

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: int) -> bool:
        return key in self._entries

    def add(self, key: int, reply_to: ReplyTo, fetch_variables: tuple[str, ...], now: int) -> None:
        """Await the result of instance `key`; drops expired entries, then the oldest ones
        while the map is full."""
        entries = self._entries
        excess = len(entries) - self.limit + 1
        if excess > 0:  # never a copy of the whole map per request
            for oldest in list(islice(entries, excess)):
                self._drop(oldest, "the map of awaited results is full")
        while entries:
            oldest = next(iter(entries))
            if now - entries[oldest].since_ms <= self.ttl_ms:
                break
            self._drop(oldest, "it expired")
        self._journal.append((key, entries.get(key, _ABSENT)))
        entries[key] = Awaited(reply_to, fetch_variables, now)

    def pop(self, key: int) -> Awaited | None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._journal.append((key, entry))
        return entry

    def _drop(self, key: int, why: str) -> None:
        entry = self._entries.pop(key)
        self._journal.append((key, entry))
        self.evicted += 1
        _LOG.warning(
            "dropping the awaited result of process instance %d (%s); its client times out",
            key,
            why,
        )

    def mark(self) -> int:
        return len(self._journal)

    def rollback(self, mark: int) -> None:
        """Undo every change since `mark` (from `mark()`)."""
        journal = self._journal
        entries = self._entries
        while len(journal) > mark:
            key, previous = journal.pop()
            if previous is _ABSENT:
                entries.pop(key, None)
            else:
                entries[key] = previous  # type: ignore[assignment]

    def commit(self) -> None:
        """The changes so far are durable (their batch committed): forget how to undo them."""
        self._journal.clear()
