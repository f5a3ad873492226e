"""The one rule every reader of the log (task, standby, verify-replay) opens a store by."""

from __future__ import annotations

import pytest

from partita.stream.partition.task import (
    _TRANSITIONS,
    IllegalTaskStateError,
    PartitionTask,
    TaskState,
)
from partita.stream.replay.restorer import Plan, decide


@pytest.mark.parametrize(
    ("applied", "processed", "log_start", "log_end", "plan"),
    [
        (-1, -1, 0, 0, Plan.EMPTY),  # a new partition
        (-1, -1, 0, 120, Plan.EMPTY),  # a new machine: a snapshot, else the whole log
        (99, 99, 0, 120, Plan.KEEP),  # replay the tail
        (99, 110, 100, 120, Plan.KEEP),  # up to the log start exactly: nothing is missing
        (98, 110, 100, 120, Plan.BEHIND),  # offset 99 was truncated: a snapshot
        (-1, 40, 100, 120, Plan.BEHIND),  # commands processed, no event applied, truncated
        (119, 119, 0, 120, Plan.KEEP),
        (120, 120, 0, 120, Plan.AHEAD),  # past the end: the topic was recreated
        (5, 5, 0, 0, Plan.AHEAD),  # state, but an empty log: another log
        (-1, 130, 0, 120, Plan.AHEAD),
    ],
)
def test_the_plan_follows_the_store_and_the_log(
    applied: int, processed: int, log_start: int, log_end: int, plan: Plan
) -> None:
    assert decide(applied, processed, log_start, log_end) is plan


def test_a_task_moves_only_along_its_lifecycle() -> None:
    reachable = {TaskState.CREATED}
    frontier = [TaskState.CREATED]
    while frontier:
        for state in _TRANSITIONS[frontier.pop()]:
            if state not in reachable:
                reachable.add(state)
                frontier.append(state)
    assert reachable == set(TaskState)
    assert TaskState.PROCESSING not in _TRANSITIONS[TaskState.STOPPED]
    assert not _TRANSITIONS[TaskState.CLOSED]


def test_an_illegal_move_is_refused() -> None:
    task = PartitionTask.__new__(PartitionTask)
    task.partition, task.state = 3, TaskState.CLOSED
    with pytest.raises(IllegalTaskStateError, match="partition 3: a task cannot go from CLOSED"):
        task._move(TaskState.PROCESSING)
