"""The map of awaited results: bounded, expiring, and undone exactly by rollback."""

from __future__ import annotations

from partita.processing.awaiting import AwaitedResults
from partita.protocol.headers import ReplyTo


def _reply(n: int) -> ReplyTo:
    return ReplyTo("t.replies", 0, f"c{n}".encode())


def test_the_oldest_request_goes_when_the_map_is_full() -> None:
    awaited = AwaitedResults(limit=3, ttl_ms=60_000)
    for key in range(1, 6):
        awaited.add(key, _reply(key), (), now=key)
    assert len(awaited) == 3
    assert [k for k in range(1, 6) if k in awaited] == [3, 4, 5]
    assert awaited.evicted == 2


def test_expired_requests_are_dropped_when_new_ones_arrive() -> None:
    awaited = AwaitedResults(limit=100, ttl_ms=1_000)
    awaited.add(1, _reply(1), (), now=0)
    awaited.add(2, _reply(2), (), now=500)
    awaited.add(3, _reply(3), (), now=1_600)  # 1 is 1.6 s old, 2 only 1.1 s: both past 1 s
    assert 1 not in awaited and 2 not in awaited and 3 in awaited
    entry = awaited.pop(3)
    assert entry is not None and entry.reply_to == _reply(3)
    assert awaited.pop(3) is None


def test_rollback_undoes_adds_pops_and_evictions_since_the_mark() -> None:
    awaited = AwaitedResults(limit=2, ttl_ms=60_000)
    awaited.add(1, _reply(1), ("a",), now=0)
    awaited.add(2, _reply(2), (), now=0)
    awaited.commit()
    mark = awaited.mark()
    awaited.pop(1)
    awaited.add(3, _reply(3), (), now=1)  # evicts 2 (the map is full)
    awaited.add(4, _reply(4), (), now=2)
    assert 1 not in awaited and 2 not in awaited
    awaited.rollback(mark)
    assert 1 in awaited and 2 in awaited and 3 not in awaited and 4 not in awaited
    restored = awaited.pop(1)
    assert restored is not None and restored.fetch_variables == ("a",)
