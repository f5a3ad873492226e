"""The coverage matrix (docs/coverage.md), generated from the conformance corpus so it cannot
drift: an element is "supported" when a corpus case activates it, and every "rejected" row holds a
sample the parser must reject.

    python -m tests.conformance.coverage > docs/coverage.md
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from partita.bpmn import BpmnValidationError, parse_bpmn
from partita.processing.builtin import build_engine
from partita.processing.deployment.validation import processes_of
from partita.protocol.intents import ProcessInstanceIntent
from tests.support import conformance_corpus as corpus
from tests.support.memory import MemoryEngine

SUPPORTED_ORDER = [
    "none start event",
    "message start event",
    "timer start event",
    "none end event",
    "error end event",
    "terminate end event",
    "none intermediate throw event",
    "message intermediate throw event",
    "message end event",
    "signal start event",
    "signal intermediate catch event",
    "signal intermediate throw event",
    "signal end event",
    "signal boundary event (interrupting)",
    "signal boundary event (non-interrupting)",
    "link intermediate throw event",
    "link intermediate catch event",
    "message intermediate catch event",
    "timer intermediate catch event",
    "message boundary event (interrupting)",
    "message boundary event (non-interrupting)",
    "timer boundary event (interrupting)",
    "timer boundary event (non-interrupting)",
    "error boundary event (interrupting)",
    "escalation intermediate throw event",
    "escalation end event",
    "escalation boundary event (interrupting)",
    "escalation boundary event (non-interrupting)",
    "service task",
    "send task",
    "script task",
    "business rule task",
    "user task",
    "receive task",
    "task",
    "manual task",
    "exclusive gateway",
    "parallel gateway",
    "inclusive gateway",
    "event-based gateway",
    "embedded subprocess",
    "event subprocess",
    "ad-hoc subprocess",
    "ad-hoc subprocess (job worker)",
    "message event subprocess start event",
    "message event subprocess start event (non-interrupting)",
    "timer event subprocess start event",
    "timer event subprocess start event (non-interrupting)",
    "error event subprocess start event",
    "escalation event subprocess start event",
    "escalation event subprocess start event (non-interrupting)",
    "signal event subprocess start event",
    "signal event subprocess start event (non-interrupting)",
    "call activity",
    "multi-instance (parallel)",
    "multi-instance (sequential)",
    "input/output mappings",
    "execution listeners",
    "task listeners",
    "canceling task listeners",
    "timer cycle as a cron expression",
    "compensation boundary event (interrupting)",
    "compensation intermediate throw event",
    "compensation end event",
]

_HEAD = (
    '<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"'
    ' xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d">'
    '<bpmn:signal id="sig" name="s"/><bpmn:escalation id="esc" escalationCode="e"/>'
    '<bpmn:process id="p" isExecutable="true"><bpmn:startEvent id="s"/>'
)
REJECTED = {
    "complex gateway": '<bpmn:complexGateway id="x"/>',
    "escalation intermediate catch events": (
        '<bpmn:intermediateCatchEvent id="x">'
        '<bpmn:escalationEventDefinition escalationRef="esc"/>'
        "</bpmn:intermediateCatchEvent>"
    ),
    "compensation event subprocess start events": (
        '<bpmn:subProcess id="x" triggeredByEvent="true"><bpmn:startEvent id="y">'
        "<bpmn:compensateEventDefinition/></bpmn:startEvent></bpmn:subProcess>"
    ),
    "conditional events": (
        '<bpmn:intermediateCatchEvent id="x">'
        "<bpmn:conditionalEventDefinition/>"
        "</bpmn:intermediateCatchEvent>"
    ),
    "link start and end events": (
        '<bpmn:endEvent id="x"><bpmn:linkEventDefinition name="l"/></bpmn:endEvent>'
    ),
    "transaction subprocess": '<bpmn:transaction id="x"/>',
    "standard loop": '<bpmn:task id="x"><bpmn:standardLoopCharacteristics/></bpmn:task>',
}


def _covered() -> dict[str, list[str]]:
    """Feature -> the corpus cases that run it: each case is played on the in-memory log and
    only the elements it activated count."""
    found: dict[str, list[str]] = {}
    for case in corpus.cases():
        models = {
            model.id: model
            for name in case.files
            for model in processes_of((corpus.BPMN / name).read_bytes(), name)
        }
        with tempfile.TemporaryDirectory() as home:
            engine = MemoryEngine(build_engine(), Path(home), partitions=1)
            try:
                corpus.run_case(engine, case)
                activated = {
                    (r.value.bpmn_process_id, r.value.element_id)
                    for r in engine.events(0)
                    if r.intent is ProcessInstanceIntent.ELEMENT_ACTIVATING
                }
            finally:
                engine.close()
        for process_id, element_id in activated:
            model = models[process_id]
            if element_id not in model.elements:
                continue
            for feature in corpus.element_features(model, model.elements[element_id]):
                cases = found.setdefault(feature, [])
                if case.name not in cases:
                    cases.append(case.name)
    return found


def _listing(cases: list[str]) -> str:
    shown = sorted(cases)[:4]
    more = len(cases) - len(shown)
    return ", ".join(shown) + (f" (+{more})" if more else "")


def _rejected(sample: str) -> str:
    try:
        parse_bpmn((_HEAD + sample + "</bpmn:process></bpmn:definitions>").encode(), "sample.bpmn")
    except BpmnValidationError as error:
        return next(str(p) for p in error.problems if p.element_id == "x")
    raise AssertionError(f"the parser accepted {sample}")


def matrix() -> str:
    covered = _covered()
    lines = [
        "# BPMN coverage",
        "",
        "Generated from the conformance corpus (`tests/conformance`) by",
        "`python -m tests.conformance.coverage > docs/coverage.md`; a test fails when it is stale.",
        '"supported": at least one corpus case activates the element (every case runs on the',
        "in-memory log and on the real broker, with replay rebuilding the same state).",
        '"rejected": deploying it fails with the reason shown.',
        "",
        "| element | status | corpus cases / reason |",
        "|---|---|---|",
    ]
    for feature in SUPPORTED_ORDER:
        cases = covered.get(feature)
        status = "supported" if cases else "not covered"
        lines.append(f"| {feature} | {status} | {_listing(cases or [])} |")
    for feature in sorted(set(covered) - set(SUPPORTED_ORDER)):
        lines.append(f"| {feature} | supported | {_listing(covered[feature])} |")
    for feature, sample in REJECTED.items():
        reason = _rejected(sample).split(": ", 1)[1]
        lines.append(f"| {feature} | rejected | {reason} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(matrix(), end="")
