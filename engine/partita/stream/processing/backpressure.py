"""Backpressure: when a partition is over its limits, new work is refused so work under way can
finish, as Zeebe's command API does.

A partition is over its limits when too many client commands wait on its ingress partition
(`<ns>.commands`, the lag), or too many commands are in flight. Only commands that start new
work are refused (`applies_to`): creating instances and publishing messages. Commands that
finish work already started (job completions, failures, error throws, cancellations, ...) are
always accepted, or an overloaded partition could never drain.

The refusal is a COMMAND_REJECTION of type `RESOURCE_EXHAUSTED` whose reason is what `check`
returns; the command is not processed, so a client may send it again (the Python clients do,
with back-off). Nothing here reads Kafka or a clock: the caller measures, this module decides.
"""

from __future__ import annotations

from dataclasses import dataclass

from partita.protocol.enums import ValueType
from partita.protocol.intents import Intent, MessageIntent, ProcessInstanceCreationIntent

LAG_SETTING = "PARTITA_BACKPRESSURE_LAG"

_NEW_WORK: frozenset[tuple[ValueType, Intent]] = frozenset(
    {
        (ValueType.PROCESS_INSTANCE_CREATION, ProcessInstanceCreationIntent.CREATE),
        (
            ValueType.PROCESS_INSTANCE_CREATION,
            ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT,
        ),
        (ValueType.MESSAGE, MessageIntent.PUBLISH),
    }
)


def applies_to(value_type: ValueType, intent: Intent) -> bool:
    """True only for the commands backpressure may refuse: PROCESS_INSTANCE_CREATION CREATE and
    CREATE_WITH_AWAITING_RESULT, and MESSAGE PUBLISH. Every other command is always accepted."""
    return (value_type, intent) in _NEW_WORK


@dataclass(frozen=True, slots=True)
class Backpressure:
    """The limits of one engine's partitions. A limit of 0 disables it.

    `limit_lag`: client commands waiting on the partition's ingress partition
    (`PARTITA_BACKPRESSURE_LAG`). `limit_in_flight`: commands the partition has taken but not
    finished. `commands_topic` only names the ingress topic in reasons.
    """

    limit_lag: int
    limit_in_flight: int = 0
    commands_topic: str = "<ns>.commands"

    def __post_init__(self) -> None:
        if self.limit_lag < 0 or self.limit_in_flight < 0:
            raise ValueError(
                f"backpressure limits must be 0 (off) or positive, got lag {self.limit_lag}"
                f" and in flight {self.limit_in_flight}"
            )

    @property
    def enabled(self) -> bool:
        return self.limit_lag > 0 or self.limit_in_flight > 0

    def check(self, partition: int, lag: int, in_flight: int = 0) -> str | None:
        """None when `partition` (the Kafka partition number, as in log lines) is within its
        limits; otherwise the rejection reason, naming the limit exceeded, the measured value
        and the limit. A value equal to its limit is within it. Never raises."""
        if self.limit_lag and lag > self.limit_lag:
            return (
                f"partition {partition} has {lag:,} commands waiting on {self.commands_topic},"
                f" over the limit of {self.limit_lag:,} ({LAG_SETTING})"
            )
        if self.limit_in_flight and in_flight > self.limit_in_flight:
            return (
                f"partition {partition} has {in_flight:,} commands in flight,"
                f" over the limit of {self.limit_in_flight:,}"
            )
        return None
