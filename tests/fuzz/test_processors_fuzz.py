"""Fuzzing the command processors: random schema-valid commands of every command intent, aimed
at real keys (instances, element instances, jobs, incidents, messages, timers) as often as at
made-up ones, with variables that are JSON objects, other JSON, or not JSON at all, in random
order and interleaved with clock advances, on the production processing state machine over
the in-memory log.

After every step: the partitions kept processing, every rejection has a type and a reason,
and no ERROR event was written (a processor that raises is a bug, whatever the command).
At the end, replaying each partition's events rebuilds the same state.

Not covered: the engine's internal commands (`INTERNAL`: element activation, due-date and
subscription commands). Any producer on the log can write them, and with random values some
processors crash (e.g. a DEPLOYMENT DISTRIBUTE naming a resource it lacks, or a
MESSAGE_SUBSCRIPTION CREATE with no process instance key); hardening them is separate work.

Run longer with
`HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest tests/fuzz/test_processors_fuzz.py`.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from msgspec.structs import fields, replace

from partita.processing.builtin import build_engine
from partita.protocol.enums import RecordType, RejectionType, ValueType
from partita.protocol.intents import (
    INTENTS_BY_VALUE_TYPE,
    DeploymentIntent,
    Intent,
    JobBatchIntent,
    JobIntent,
    MessageIntent,
    MessageSubscriptionIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
    ProcessMessageSubscriptionIntent,
    TimerIntent,
)
from partita.protocol.records import Record, command
from partita.protocol.values import (
    VALUE_CLASSES,
    DeploymentResource,
    DeploymentValue,
    JobBatchValue,
    JobValue,
    MessageValue,
    ProcessInstanceCreationValue,
)
from tests.support.fuzz_profiles import fuzz_settings
from tests.support.memory import MemoryEngine
from tests.support.paths import BPMN_FIXTURES
from tests.support.record_strategies import value_of

PARTITIONS = 2

INTERNAL: set[Intent] = {
    DeploymentIntent.DISTRIBUTE,
    ProcessInstanceIntent.ACTIVATE_ELEMENT,
    ProcessInstanceIntent.COMPLETE_ELEMENT,
    ProcessInstanceIntent.TERMINATE_ELEMENT,
    JobIntent.TIME_OUT,
    JobIntent.RECUR_AFTER_BACKOFF,
    MessageIntent.EXPIRE,
    TimerIntent.TRIGGER,
    TimerIntent.CANCEL,
    *(i for i in MessageSubscriptionIntent if not i.is_event),
    *(i for i in ProcessMessageSubscriptionIntent if not i.is_event),
}
"""Commands only the engine writes (follow-ups, due-date checkers, the other partition's half
of a subscription). They trust their values, so random ones are not fuzzed here: see the
module docstring."""
COMMANDS: list[Intent] = [
    intent
    for enum in INTENTS_BY_VALUE_TYPE.values()
    for intent in enum
    if not intent.is_event and intent not in INTERNAL and intent is not DeploymentIntent.CREATE
]
"""Every command a client sends but deployment (fixtures are deployed up front; deploying
random bytes is what the BPMN fuzz tests do)."""

PROCESS_IDS = [
    "one-task",
    "order-process",
    "wait-payment",
    "wait-or-timeout",
    "with-boundaries",
    "with-event-sub",
    "with-subprocess",
    "mi-parallel",
    "mi-sequential",
    "mi-condition",
    "parent",
    "child",
    "error-end",
    "uncaught-error",
    "bad-mapping",
    "paths",
    "terminating",
    "typed-task",
    "sleepy",
    "ticker",
    "nope",
]
TEXT = {
    "bpmn_process_id": PROCESS_IDS,
    "name": ["approved", "cancel-order", "order-confirmed", "payment-received", "order-placed"],
    "message_name": ["approved", "cancel-order", "payment-received", "order-placed"],
    "correlation_key": ["", "order-1", "r-1", "42"],
    "type": ["work", "payment-service", "ship", "pack", "vote", "step", "slow", "a", "b"],
    "error_code": ["", "BOOM", "NOPE", "OUT_OF_STOCK", "CHILD_FAILED"],
    "element_id": ["start", "task", "end", "pause", "f1", ""],
    "target_element_id": ["start", "task", "end", "pause", ""],
    "message_id": ["", "m-1"],
}
"""Names the fixtures use, so random commands meet real processes, jobs and subscriptions."""

VARIABLES = st.one_of(
    st.dictionaries(
        st.sampled_from(["orderId", "id", "requestId", "amount", "items", "region", "x"]),
        st.none()
        | st.booleans()
        | st.integers(-(10**6), 10**6)
        | st.text(max_size=5)
        | st.lists(st.integers(0, 3), max_size=3),
        max_size=4,
    ).map(json.dumps),
    st.sampled_from(
        [
            "",
            "{}",
            "null",
            "[]",
            "[1, 2]",
            '"text"',
            "42",
            "{",
            "{'a': 1}",
            '{"a": NaN}',
            '{"a": Infinity}',
            '{"a": 1e999}',
            '{"a": ' + "1" * 5000 + "}",
            '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",
            '{"a": 1, "a": 2}',
            '{"\\ud800": 1}',
        ]
    ),
    st.text(max_size=20),
)
"""Variables documents: objects, other JSON, non-standard JSON Python accepts, and garbage."""


class CommandMachine(RuleBasedStateMachine):
    """The engine with every fixture deployed; rules send commands and move the clock."""

    def __init__(self) -> None:
        super().__init__()
        self.home = Path(tempfile.mkdtemp(prefix="fuzz-processors-"))
        self.engine = MemoryEngine(build_engine(), self.home / "live", partitions=PARTITIONS)
        self.checked = [0] * PARTITIONS
        self.keys: list[int] = []
        self.keys_by_type: dict[ValueType, list[int]] = {}

    @initialize()
    def deploy_and_start(self) -> None:
        for path in sorted(BPMN_FIXTURES.glob("*.bpmn")):
            value = DeploymentValue(resources=(DeploymentResource(path.name, path.read_bytes()),))
            self.send(command(DeploymentIntent.CREATE, value))
        for process_id in ("one-task", "order-process", "wait-payment", "with-boundaries"):
            creation = ProcessInstanceCreationValue(
                bpmn_process_id=process_id, variables='{"orderId": "order-1", "id": "order-1"}'
            )
            self.send(command(ProcessInstanceCreationIntent.CREATE, creation))

    def send(self, record: Record, partition: int = 0) -> None:
        self.engine.send(partition, record)
        self.engine.run()
        self.check_new_records()

    def check_new_records(self) -> None:
        for partition in range(PARTITIONS):
            records = self.engine.records(partition)
            for record in records[self.checked[partition] :]:
                assert record.value_type is not ValueType.ERROR, (
                    f"a processor crashed: {record.value.exception_message}\n"  # type: ignore[union-attr]
                    f"{record.value.stacktrace}"  # type: ignore[union-attr]
                )
                if record.record_type is RecordType.COMMAND_REJECTION:
                    assert record.rejection_type is not None, record
                    assert record.rejection_reason, record
                self.collect_keys(record)
            self.checked[partition] = len(records)

    def collect_keys(self, record: Record) -> None:
        if record.record_type is not RecordType.EVENT:
            return
        found = [record.key] + [
            getattr(record.value, f.name)
            for f in fields(record.value)  # type: ignore[arg-type]
            if f.name.endswith("_key") and isinstance(getattr(record.value, f.name), int)
        ]
        for key in found:
            if key > 0 and key not in self.keys:
                self.keys.append(key)
        same_type = self.keys_by_type.setdefault(record.value_type, [])
        if record.key > 0 and record.key not in same_type:
            same_type.append(record.key)

    # -- rules ---------------------------------------------------------------------------------

    @rule(data=st.data())
    def send_a_random_command(self, data: st.DataObject) -> None:
        intent = data.draw(st.sampled_from(COMMANDS), label="intent")
        value_type = next(vt for vt, enum in INTENTS_BY_VALUE_TYPE.items() if type(intent) is enum)
        value = data.draw(value_of(VALUE_CLASSES[value_type]), label="random value")
        value = replace(value, **self.aimed_fields(value, data))
        key = data.draw(self.key_strategy(value_type), label="key")
        partition = data.draw(st.integers(0, PARTITIONS - 1), label="partition")
        self.send(command(intent, value, key), partition)

    @rule(process_id=st.sampled_from(PROCESS_IDS), variables=VARIABLES)
    def create_an_instance(self, process_id: str, variables: str) -> None:
        value = ProcessInstanceCreationValue(bpmn_process_id=process_id, variables=variables)
        self.send(command(ProcessInstanceCreationIntent.CREATE, value))

    @rule(seconds=st.sampled_from([0.5, 1, 5, 11, 60, 3600, 86_400 * 8]))
    def advance_the_clock(self, seconds: float) -> None:
        self.engine.advance(seconds)
        self.check_new_records()

    @invariant()
    def every_partition_is_quiet(self) -> None:
        for partition, machine in enumerate(self.engine.machines):
            assert machine.next_offset == len(self.engine.kafka.log(MemoryEngine.TOPIC, partition))

    def teardown(self) -> None:
        try:
            self.engine.assert_replay_matches(self.home)
        finally:
            self.engine.close()
            shutil.rmtree(self.home, ignore_errors=True)

    # -- aiming --------------------------------------------------------------------------------

    def key_strategy(self, value_type: ValueType | None = None) -> st.SearchStrategy[int]:
        """Mostly real keys (of entities of `value_type` first), sometimes none or any."""
        real = st.sampled_from(self.keys) if self.keys else st.just(-1)
        own = self.keys_by_type.get(value_type) if value_type else None
        aimed = st.sampled_from(own) if own else real
        return st.one_of(aimed, aimed, real, st.just(-1), st.integers(-(2**63), 2**63 - 1))

    def aimed_fields(self, value: Any, data: st.DataObject) -> dict[str, Any]:
        """Key fields at real keys, names at the fixtures' names, variables at VARIABLES, each
        most of the time; the rest stays random."""
        hints = typing.get_type_hints(type(value))
        changes: dict[str, Any] = {}
        for f in fields(value):
            if not data.draw(st.integers(0, 3), label=f"aim {f.name}"):
                continue  # leave a quarter of the fields random
            if f.name.endswith("_key") and hints[f.name] is int:
                changes[f.name] = data.draw(self.key_strategy(), label=f.name)
            elif f.name in TEXT:
                changes[f.name] = data.draw(st.sampled_from(TEXT[f.name]), label=f.name)
            elif f.name == "variables" or (f.name == "value" and hints[f.name] is str):
                changes[f.name] = data.draw(VARIABLES, label=f.name)
            elif f.name in ("retries", "max_jobs_to_activate"):
                changes[f.name] = data.draw(st.integers(-2, 5), label=f.name)
            elif f.name in _TIMES and hints[f.name] is int:  # a user task's due date is text
                changes[f.name] = data.draw(
                    st.sampled_from([-1, 0, 1, 1000, 60_000, 2**31 - 1, 2**63 - 1]), label=f.name
                )
        return changes


_TIMES = ("timeout", "time_to_live", "retry_backoff", "due_date", "deadline")

CommandMachine.TestCase.settings = fuzz_settings(max_examples=25, stateful_step_count=25)
test_random_commands_never_crash_a_processor = CommandMachine.TestCase


# -- regressions the machine found ----------------------------------------------------------

HUGE = 2**63 - 1


def _regressions() -> dict[str, tuple[Intent, Any]]:
    documents = {
        "integer-over-4300-digits": '{"a": ' + "1" * 5000 + "}",
        "nested-100k-deep": '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "lone-surrogate-name": '{"\\ud800": 1}',
        "nan": '{"a": NaN}',
        "infinity": '{"a": 1e999}',
    }
    cases: dict[str, tuple[Intent, Any]] = {
        f"create-{name}": (
            ProcessInstanceCreationIntent.CREATE,
            ProcessInstanceCreationValue(bpmn_process_id="one-task", variables=text),
        )
        for name, text in documents.items()
    }
    cases |= {
        f"publish-{name}": (MessageIntent.PUBLISH, MessageValue(name="m", variables=text))
        for name, text in documents.items()
    }
    cases["publish-ttl-past-int64"] = (
        MessageIntent.PUBLISH,
        MessageValue(name="m", time_to_live=HUGE),
    )
    cases["activate-timeout-past-int64"] = (
        JobBatchIntent.ACTIVATE,
        JobBatchValue(type="work", worker="w", timeout=HUGE),
    )
    return cases


REGRESSIONS = _regressions()


@pytest.mark.parametrize(("intent", "value"), REGRESSIONS.values(), ids=REGRESSIONS.keys())
def test_commands_that_crashed_a_processor_are_rejected(
    intent: Intent, value: Any, tmp_path: Path
) -> None:
    engine = MemoryEngine(build_engine(), tmp_path, partitions=1)
    try:
        deploy = DeploymentValue(
            resources=(
                DeploymentResource("one-task.bpmn", (BPMN_FIXTURES / "one-task.bpmn").read_bytes()),
            )
        )
        engine.send(0, command(DeploymentIntent.CREATE, deploy))
        position = engine.send(0, command(intent, value))
        engine.run()
        (rejection,) = engine.results_of(0, position)
        assert rejection.record_type is RecordType.COMMAND_REJECTION
        assert rejection.rejection_type is RejectionType.INVALID_ARGUMENT
        assert rejection.rejection_reason
    finally:
        engine.close()


def test_a_job_failed_with_a_backoff_past_int64_is_rejected(tmp_path: Path) -> None:
    engine = MemoryEngine(build_engine(), tmp_path, partitions=1)
    try:
        resource = DeploymentResource(
            "one-task.bpmn", (BPMN_FIXTURES / "one-task.bpmn").read_bytes()
        )
        engine.send(0, command(DeploymentIntent.CREATE, DeploymentValue(resources=(resource,))))
        creation = ProcessInstanceCreationValue(bpmn_process_id="one-task")
        engine.send(0, command(ProcessInstanceCreationIntent.CREATE, creation))
        engine.run()
        (job,) = [r for r in engine.events(0) if r.intent is JobIntent.CREATED]
        failure = JobValue(retries=2, retry_backoff=HUGE)
        position = engine.send(0, command(JobIntent.FAIL, failure, key=job.key))
        engine.run()
        (rejection,) = engine.results_of(0, position)
        assert rejection.rejection_type is RejectionType.INVALID_ARGUMENT
        assert "retryBackOff" in rejection.rejection_reason
    finally:
        engine.close()
