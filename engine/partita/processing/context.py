"""What a processor sees: state, keys, the clock, and writers for its results."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from msgspec.structs import replace

from partita import __version__
from partita.config.settings import MESSAGE_TTL
from partita.feel.temporal_functions import use_clock
from partita.processing.awaiting import AwaitedResults
from partita.processing.dispatch import Engine
from partita.protocol.enums import RecordType, RejectionType
from partita.protocol.headers import Headers, ReplyTo
from partita.protocol.intents import Intent
from partita.protocol.records import NO_KEY, Record, command
from partita.protocol.values import VALUE_TYPES, JobValue, RecordValue
from partita.state import KeyGenerator, PartitionDb
from partita.state.view import StateView

_Hook = TypeVar("_Hook")

DEFAULT_MESSAGE_TTL_MS: int = MESSAGE_TTL.default
MAX_DEADLINE = 2**63 - 1
# Enum members read off their class cost ~130 ns each on Python 3.11 (see partita.protocol.enums):
# the per-record path compares against module names bound once.
_EVENT = RecordType.EVENT
"""Deadlines and due dates are stored as 64-bit signed integers: a command whose time to live,
timeout or backoff would put one past this is rejected."""


class RejectionError(Exception):
    """Raised by a processor to reject its command (a business failure, not a bug)."""

    def __init__(self, rejection_type: RejectionType, reason: str) -> None:
        super().__init__(reason)
        self.rejection_type = rejection_type
        self.reason = reason


class HandOverError(Exception):
    """Raised by a processor whose command this partition cannot answer yet but `partition`
    can: the stream layer undoes the attempt and writes the command, with its reply address,
    to that partition of the log, where it is processed instead. Used for a creation that
    names a process this partition has not received yet: partition 0 deploys every process
    before the deployment's reply is sent, while the distribution to other partitions and a
    client's next command can arrive in either order."""

    def __init__(self, partition: int, reason: str) -> None:
        super().__init__(reason)
        self.partition = partition
        self.reason = reason


@dataclass(slots=True)
class ProcessingOutput:
    """Everything a batch writes to Kafka, in order."""

    records: list[tuple[int, Record]] = field(default_factory=list)
    """(Kafka partition, record): own events and rejections, commands for other partitions."""
    replies: list[tuple[ReplyTo, Record]] = field(default_factory=list)
    forwarded: list[tuple[int, bytes, Headers]] = field(default_factory=list)
    """(partition, raw value, headers) of commands that arrived on the wrong partition."""
    pushed: list[tuple[str, int, int, Record]] = field(default_factory=list)
    """(job topic, partition, job key, JOB_BATCH ACTIVATED) of pushed jobs."""

    def __len__(self) -> int:
        return len(self.records) + len(self.replies) + len(self.forwarded) + len(self.pushed)

    def mark(self) -> tuple[int, int, int, int]:
        return len(self.records), len(self.replies), len(self.forwarded), len(self.pushed)

    def truncate(self, mark: tuple[int, int, int, int]) -> None:
        del self.records[mark[0] :]
        del self.replies[mark[1] :]
        del self.forwarded[mark[2] :]
        del self.pushed[mark[3] :]


class ProcessingContext:
    """The world of one command. Events written here are applied to state immediately."""

    def __init__(  # noqa: PLR0917 - built in one place, by the processing state machine
        self,
        engine: Engine,
        db: PartitionDb,
        keys: KeyGenerator,
        partition: int,
        output: ProcessingOutput,
        route: Callable[[Record], int],
        partition_count: int = 1,
    ) -> None:
        self.engine = engine
        self.state: StateView = db
        """Read only: a processor writes events (`append_event`), whose appliers change state."""
        self._db = db
        self._appliers = engine.appliers_by_intent
        self.keys = keys
        self.partition = partition
        self.partition_id = partition + 1
        self.partition_count = partition_count
        self.output = output
        self._route = route
        self.follow_ups: list[Record] = []
        self.awaiting = AwaitedResults()
        """Instances created with CREATE_WITH_AWAITING_RESULT: where to answer when they end
        (the partition's own map, journaled so failed attempts and aborted batches undo)."""
        self.hooks: dict[type, object] = {}
        """The topic hooks bound to this context (`TopicHook.bind`), by their type."""
        self.message_ttl_ms = DEFAULT_MESSAGE_TTL_MS
        """The time to live of a published message that names none."""
        self.touched_job_types: set[str] = set()
        """Types of the jobs the current command's events changed (push looks at these)."""
        self.command: Record | None = None
        self.reply_to: ReplyTo | None = None
        self.now = 0
        """The command's time (ms): what FEEL's now() and today() read while this batch runs."""
        use_clock(self)
        self.responded = False

    def hook(self, kind: type[_Hook]) -> _Hook | None:
        """The bound topic hook of type `kind` (e.g. job push), None when the worker has none."""
        found = self.hooks.get(kind)
        return found if isinstance(found, kind) else None

    def begin(self, record: Record, reply_to: ReplyTo | None, now: int) -> None:
        self.command = record
        self.reply_to = reply_to
        self.now = now
        self.responded = False
        self.touched_job_types.clear()

    def append_event(
        self, intent: Intent, value: RecordValue, key: int, *, respond: bool = False
    ) -> Record:
        """Write an event and apply it to state. `respond` makes it the command's reply."""
        assert self.command is not None
        event = Record(  # by position: the cheapest way to build one, on every event written
            _EVENT,
            VALUE_TYPES[type(value)],
            intent,
            value,
            key,
            self.partition_id,
            self.command.position,
            self.now,
            None,
            "",
            __version__,
        )
        applier = self._appliers.get(intent)  # an event written now is of version 1
        if applier is not None:
            applier(event, self._db)
        if type(value) is JobValue:
            self.touched_job_types.add(value.type)
        self.output.records.append((self.partition, event))
        if respond:
            self.respond(event)
        return event

    def reject(self, rejection_type: RejectionType, reason: str) -> Record:
        """Write the rejection of the current command; it is also the reply."""
        assert self.command is not None
        rejection = replace(
            self.command,
            record_type=RecordType.COMMAND_REJECTION,
            partition_id=self.partition_id,
            source_record_position=self.command.position,
            timestamp=self.now,
            rejection_type=rejection_type,
            rejection_reason=reason,
            engine_version=__version__,
            position=-1,
        )
        self.output.records.append((self.partition, rejection))
        self.respond(rejection)
        return rejection

    def defer_reply(self) -> ReplyTo | None:
        """The current command's reply address, now the caller's to answer later (a user task
        command waiting for its task listeners); no event of this command answers it."""
        reply_to = None if self.responded else self.reply_to
        self.responded = True
        return reply_to

    def respond(self, record: Record) -> None:
        if self.reply_to is not None and not self.responded:
            self.output.replies.append((self.reply_to, record))
        self.responded = True

    def append_command(
        self,
        intent: Intent,
        value: RecordValue,
        key: int = NO_KEY,
        *,
        partition: int | None = None,
    ) -> None:
        """A follow-up command: processed in this batch when it belongs to this partition,
        written to its partition otherwise (routing decides unless `partition` is given)."""
        assert self.command is not None
        # Follow-ups processed in this batch never reach the log: their records name the
        # position of the command from the log that caused them.
        follow_up = replace(
            command(intent, value, key),
            partition_id=self.partition_id,
            timestamp=self.now,
            engine_version=__version__,
            position=self.command.position,
        )
        target = self._route(follow_up) if partition is None else partition
        if target == self.partition:
            self.follow_ups.append(follow_up)
        else:
            self.output.records.append(
                (target, replace(follow_up, partition_id=target + 1, position=-1))
            )
