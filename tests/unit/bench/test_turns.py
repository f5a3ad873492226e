"""The schedule by which `partita bench gateway`'s paths take turns: each path sends at the rate
in its own slots only, the slots of the paths one after another, and no two paths ever send in
the same slot."""

from __future__ import annotations

import time

import pytest

from partita.bench.turns import Turns, send_times


def test_a_path_sends_at_the_rate_within_its_slots_and_waits_out_the_others() -> None:
    second_of_three = Turns(start=1000.0, slot_s=1.0, turns=3, turn=1)
    offsets = [second_of_three.offset_s(n, rate=4) for n in range(10)]
    # slot 1 (its first), then slot 4, then slot 7: four instances a slot, a quarter second apart
    assert offsets == [1.0, 1.25, 1.5, 1.75, 4.0, 4.25, 4.5, 4.75, 7.0, 7.25]


def test_no_two_paths_send_in_the_same_slot() -> None:
    paths = [Turns(start=0.0, slot_s=0.5, turns=4, turn=t) for t in range(4)]
    slots_of = [{int(p.offset_s(n, rate=200) / 0.5) for n in range(1000)} for p in paths]
    for one in range(4):
        for other in range(one + 1, 4):
            assert not slots_of[one] & slots_of[other]
    assert all(len(slots) == 10 for slots in slots_of)  # 1,000 at 100 a slot


def test_a_rate_below_one_instance_a_slot_still_sends_one_each_slot() -> None:
    slow = Turns(start=0.0, slot_s=0.1, turns=2, turn=0)
    assert [slow.offset_s(n, rate=1) for n in range(3)] == pytest.approx([0.0, 0.2, 0.4])


def test_the_schedule_crosses_to_the_load_generators_as_one_argument() -> None:
    turns = Turns(start=1_765_000_000.123456, slot_s=1.5, turns=4, turn=3)
    assert Turns.parse(turns.argument()) == turns


@pytest.mark.parametrize(
    ("slot_s", "turns", "turn"), [(0.0, 2, 0), (-1.0, 2, 0), (1.0, 2, 2), (1.0, 2, -1)]
)
def test_a_schedule_that_cannot_be_kept_is_refused(slot_s: float, turns: int, turn: int) -> None:
    with pytest.raises(ValueError, match="not a schedule of turns"):
        Turns(start=0.0, slot_s=slot_s, turns=turns, turn=turn)


def test_without_turns_instances_go_at_the_rate_from_now() -> None:
    before = time.monotonic()
    origin, offset = send_times(50, None)
    assert before <= origin <= time.monotonic()
    assert [offset(n) for n in (0, 1, 50)] == [0.0, 0.02, 1.0]
    turns = Turns(start=0.0, slot_s=1.0, turns=2, turn=1)
    _, in_turns = send_times(50, turns)
    assert in_turns(0) == 1.0
