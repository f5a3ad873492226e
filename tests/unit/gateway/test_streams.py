"""How the gateway hands a type's pushed jobs out, without Kafka: open streams in turn, then
parked long polls oldest first and no more than each asked for, then held for the next request,
and given back to the engine (JOB YIELD) when nobody takes them in time."""

from __future__ import annotations

import asyncio
from typing import Any

from partita.gateway.streams import HOLD_S, JobStream, JobStreams, Taker, _Feed
from partita.protocol.values import JobValue


class Recording(JobStreams):
    """JobStreams whose yields are recorded instead of sent, and whose feeds never start."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.given_back: list[int] = []
        self._feeds = {}
        self._topics = set()
        self._yields = set()
        self._janitor = None

    def give_back(self, key: int) -> None:
        self.given_back.append(key)

    async def _feed(self, job_type: str) -> _Feed:
        feed = self._feeds.get(job_type)
        if feed is None:
            feed = self._feeds[job_type] = _Feed(self, job_type)
        return feed


def jobs(*keys: int) -> list[tuple[int, JobValue]]:
    return [(key, JobValue(type="t")) for key in keys]


def run(scenario: Any) -> Any:
    return asyncio.run(scenario())


def test_open_streams_take_the_jobs_in_turn() -> None:
    async def scenario() -> tuple[list[int], list[int]]:
        streams = Recording()
        feed = await streams._feed("t")
        first, second = JobStream("t", "a"), JobStream("t", "b")
        feed.open += [first, second]
        feed.deliver(jobs(1, 2, 3, 4))
        return (
            [first.queue.get_nowait()[0] for _ in range(2)],
            [second.queue.get_nowait()[0] for _ in range(2)],
        )

    assert run(scenario) == ([1, 3], [2, 4])


def test_parked_polls_take_no_more_than_they_asked_for_oldest_first() -> None:
    async def scenario() -> tuple[list[int], list[int], list[int]]:
        streams = Recording()
        older = await streams.take("t", 2)
        newer = await streams.take("t", 5)
        assert older is not None and newer is not None
        (await streams._feed("t")).deliver(jobs(1, 2, 3))
        assert older.ready.is_set() and newer.ready.is_set()
        held = [key for _, (key, _) in (await streams._feed("t")).held]
        return [k for k, _ in older.jobs], [k for k, _ in newer.jobs], held

    assert run(scenario) == ([1, 2], [3], [])


def test_a_job_nobody_waits_for_is_held_for_the_next_request_then_given_back() -> None:
    async def scenario() -> tuple[list[int], list[int]]:
        streams = Recording()
        feed = await streams._feed("t")
        feed.deliver(jobs(1, 2))
        taker = await streams.take("t", 1)  # the next poll takes a held job at once
        assert taker is not None and taker.ready.is_set()
        loop_time = feed.held[0][0]
        feed.expire(loop_time + HOLD_S / 2)
        assert streams.given_back == []
        feed.expire(loop_time + HOLD_S * 2)
        return [k for k, _ in taker.jobs], streams.given_back

    assert run(scenario) == ([1], [2])


def test_a_released_poll_hands_on_what_it_did_not_use() -> None:
    async def scenario() -> tuple[list[int], list[int], list[int]]:
        streams = Recording()
        done = await streams.take("t", 3)
        waiting = await streams.take("t", 3)
        assert done is not None and waiting is not None
        feed = await streams._feed("t")
        feed.deliver(jobs(1, 2))
        streams.release("t", done, keep=1)  # it answered with one: the other goes on
        return [k for k, _ in done.jobs], [k for k, _ in waiting.jobs], streams.given_back

    assert run(scenario) == ([1], [2], [])


def test_a_poll_cancelled_before_it_used_its_jobs_passes_them_on() -> None:
    async def scenario() -> list[int]:
        streams = Recording()
        taker = await streams.take("t", 2)
        assert isinstance(taker, Taker)
        feed = await streams._feed("t")
        feed.deliver(jobs(7))
        streams.release("t", taker, keep=0)  # its client went away
        return [key for _, (key, _) in feed.held]

    assert run(scenario) == [7]


def test_a_feed_leaving_the_group_gives_back_what_it_held_and_what_it_still_reads() -> None:
    async def scenario() -> list[int]:
        streams = Recording()
        feed = await streams._feed("t")
        feed.deliver(jobs(1))  # held: no request waits
        await feed.stop()  # the linger ended
        feed.deliver(jobs(2))  # read by its consumer while it was leaving
        return streams.given_back

    assert run(scenario) == [1, 2]
