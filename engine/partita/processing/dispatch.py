"""The dispatch maps of the state machine, `Handlers` (the decorators a module registers its
processors, appliers and due-date checkers with), and `TopicHook`, the one way engine work
tied to topics on the cluster (job push) reaches the stream layer, which names no domain."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol, TypeVar

from partita.config import Config
from partita.protocol.enums import RecordType, ValueType
from partita.protocol.intents import INTENTS_BY_VALUE_TYPE, Intent
from partita.protocol.records import Record
from partita.state import PartitionDb

if TYPE_CHECKING:
    from partita.processing.context import ProcessingContext

Processor = Callable[[Record, "ProcessingContext"], None]
"""Handles one command: reads state, writes events / a rejection / follow-up commands."""

Applier = Callable[[Record, PartitionDb], None]
"""Applies one event to state. Must be deterministic: no clock, no randomness, no I/O."""

DueDateChecker = Callable[[PartitionDb, int], Iterable[Record]]
"""Given state and the current time (ms), the commands for work that is due now: the
earliest first, and at most MAX_DUE_COMMANDS of them. A checker that returns that many may
have left more due work for its next run, which its caller should make at once."""

MAX_DUE_COMMANDS = 1000
"""Most commands one due-date checker run returns, so that one batch stays bounded however
much work falls due at the same moment (10,000 timers of one cycle, a broker down for hours)."""

AfterCommand = Callable[[Record, "ProcessingContext"], None]
"""Runs after each successful processor, inside the command's savepoint (e.g. job push)."""


class TopicHook(Protocol):
    """Engine work that writes, in the batch's own transaction, to topics the worker finds
    on the cluster (Zeebe's side-effect writer, scheduled by the stream layer): job push is
    one. The stream layer calls these and nothing else of the domain."""

    def configure(self, config: Config) -> None:
        """Take the worker's settings (e.g. limits) before the first batch."""

    def topic_prefix(self, namespace: str) -> str:
        """The prefix of the topics this hook writes to."""

    def readers(self, topic: str) -> str | None:
        """The consumer group that must have members for `topic` to be written to (None: it
        is written whenever it exists)."""

    def topics_found(self, topics: Mapping[str, int]) -> list[str]:
        """The topics with the prefix that exist now (name -> partitions); returns the names
        that became writable or stopped being so since the last call, for `catch_up`."""

    def bind(self, ctx: ProcessingContext) -> None:
        """Attach the hook to a batch's context, so processors and after-command hooks use it."""

    def catch_up(self, ctx: ProcessingContext, names: Sequence[str], now: int) -> None:
        """In a batch without commands, at `now` (ms): the work that waited for the topics
        `names` to appear or to go (e.g. jobs activatable before their job topic had workers;
        jobs pushed to a topic whose workers left). Begins its own trigger on `ctx`."""


_P = TypeVar("_P", bound=Processor)
_A = TypeVar("_A", bound=Applier)
_C = TypeVar("_C", bound=DueDateChecker)
_H = TypeVar("_H", bound=AfterCommand)
_T = TypeVar("_T", bound=Callable[[], "TopicHook"])
_K = TypeVar("_K")
# Enum members read off their class cost ~130 ns each on Python 3.11 (see partita.protocol.enums):
# the per-record path compares against module names bound once.
_COMMAND = RecordType.COMMAND


class Handlers:
    """The handlers one module defines, each registered by a decorator on its definition:

        handlers = Handlers()

        @handlers.processor(JobIntent.COMPLETE)
        def complete(command: Record, ctx: ProcessingContext) -> None: ...

    Nothing is registered until an engine build installs the module (`Engine.install`), in
    the order of the definitions; the order of due-date checkers is the order they run in.
    """

    def __init__(self) -> None:
        self.processors: list[tuple[Intent, Processor]] = []
        self.appliers: list[tuple[Intent, Applier, int]] = []
        self.due_date_checkers: list[DueDateChecker] = []
        self.after_command_hooks: list[AfterCommand] = []
        self.topic_hooks: list[Callable[[], TopicHook]] = []
        """Factories: each engine installing these handlers gets hooks of its own."""

    def processor(self, *intents: Intent) -> Callable[[_P], _P]:
        """Register the decorated function as the processor of the commands `intents`."""

        def register(function: _P) -> _P:
            self.processors.extend((intent, function) for intent in intents)
            return function

        return register

    def applier(self, *intents: Intent, version: int = 1) -> Callable[[_A], _A]:
        """Register the decorated function as the applier of the events `intents`."""

        def register(function: _A) -> _A:
            self.appliers.extend((intent, function, version) for intent in intents)
            return function

        return register

    def due_date_checker(self, function: _C) -> _C:
        self.due_date_checkers.append(function)
        return function

    def after_command(self, function: _H) -> _H:
        self.after_command_hooks.append(function)
        return function

    def topic_hook(self, factory: _T) -> _T:
        """Register a TopicHook class (or factory); every engine gets an instance of its own."""
        self.topic_hooks.append(factory)
        return factory


def _value_type_of(intent: Intent) -> ValueType:
    for value_type, enum in INTENTS_BY_VALUE_TYPE.items():
        if type(intent) is enum:
            return value_type
    raise ValueError(f"{intent!r} belongs to no value type")


class Engine:
    """Processors, appliers and due-date checkers of one engine build."""

    MAX_DUE_COMMANDS: ClassVar[int] = MAX_DUE_COMMANDS
    """The cap of every due-date checker, for callers that hold only the engine."""

    def __init__(self) -> None:
        self.processors: dict[tuple[RecordType, ValueType, Intent], Processor] = {}
        self._command_processors: dict[Intent, tuple[ValueType, Processor]] = {}
        """`processors` by the command's intent alone (one lookup by identity, no tuple): the
        lookup of every command processed."""
        self.appliers: dict[tuple[ValueType, Intent, int], Applier] = {}
        self.appliers_by_intent: dict[Intent, Applier] = {}
        """The version 1 appliers by intent alone (an intent names its value type): the
        lookup of every event written and replayed."""
        self.due_date_checkers: list[DueDateChecker] = []
        self.after_command_hooks: list[AfterCommand] = []
        self.topic_hooks: list[TopicHook] = []

    def install(self, handlers: Handlers) -> None:
        """Register every handler a module recorded in `handlers`."""
        for intent, processor in handlers.processors:
            self.processor(intent, processor)
        for intent, applier, version in handlers.appliers:
            self.applier(intent, applier, version)
        for checker in handlers.due_date_checkers:
            self.due_date_checker(checker)
        for hook in handlers.after_command_hooks:
            self.after_command(hook)
        for factory in handlers.topic_hooks:
            self.topic_hook(factory())

    def processor(self, intent: Intent, processor: Processor) -> None:
        """Register the processor of the command `intent`."""
        if intent.is_event:
            raise ValueError(f"{intent!r} is an event intent; processors handle commands")
        key = (RecordType.COMMAND, _value_type_of(intent), intent)
        if key in self.processors:
            raise ValueError(f"a processor for {intent!r} is already registered")
        self.processors[key] = processor
        self._command_processors[intent] = (key[1], processor)

    def applier(self, intent: Intent, applier: Applier, version: int = 1) -> None:
        """Register the applier of the event `intent` at `version`."""
        if not intent.is_event:
            raise ValueError(f"{intent!r} is a command intent; appliers handle events")
        key = (_value_type_of(intent), intent, version)
        if key in self.appliers:
            raise ValueError(f"an applier for {intent!r} v{version} is already registered")
        self.appliers[key] = applier
        if version == 1:
            self.appliers_by_intent[intent] = applier

    def due_date_checker(self, checker: DueDateChecker) -> None:
        self.due_date_checkers.append(checker)

    def after_command(self, hook: AfterCommand) -> None:
        self.after_command_hooks.append(hook)

    def topic_hook(self, hook: TopicHook) -> None:
        self.topic_hooks.append(hook)

    def hook(self, kind: type[_K]) -> _K:
        """This engine's topic hook of class `kind` (e.g. its JobPush); LookupError if none."""
        for hook in self.topic_hooks:
            if isinstance(hook, kind):
                return hook
        raise LookupError(f"this engine has no {kind.__name__} hook")

    def find_processor(self, record: Record) -> Processor | None:
        found = self._command_processors.get(record.intent)
        if found is None or record.record_type is not _COMMAND or found[0] is not record.value_type:
            return None
        return found[1]

    def apply(self, record: Record, db: PartitionDb) -> None:
        """Apply an event (events without an applier change no state)."""
        if record.record_version == 1:
            applier = self.appliers_by_intent.get(record.intent)
        else:
            applier = self.appliers.get((record.value_type, record.intent, record.record_version))
        if applier is not None:
            applier(record, db)
