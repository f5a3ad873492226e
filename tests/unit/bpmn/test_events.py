"""Message and timer events in the model, their validation, and ISO-8601 timer values."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from partita.bpmn import BpmnValidationError, EventNode, parse_bpmn
from partita.bpmn.schedule import ScheduleError, after, cycle, date, first_due
from partita.protocol.enums import BpmnElementType, BpmnEventType


def _ms(text: str) -> int:
    return round(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def _definitions(process: str, messages: str = "") -> bytes:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d">
  {messages}
  <bpmn:process id="p" isExecutable="true">{process}</bpmn:process>
</bpmn:definitions>""".encode()


MESSAGE = """<bpmn:message id="m" name="paid">
  <bpmn:extensionElements><zeebe:subscription correlationKey="=id" /></bpmn:extensionElements>
</bpmn:message>"""


def _problems(data: bytes) -> list[str]:
    with pytest.raises(BpmnValidationError) as raised:
        parse_bpmn(data, "events.bpmn")
    return [str(p) for p in raised.value.problems]


def test_catch_boundary_and_start_events_are_modelled() -> None:
    (process,) = parse_bpmn(
        _definitions(
            """<bpmn:startEvent id="s">
              <bpmn:messageEventDefinition messageRef="m"/></bpmn:startEvent>
            <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
            <bpmn:serviceTask id="t"><bpmn:extensionElements>
              <zeebe:taskDefinition type="x"/></bpmn:extensionElements></bpmn:serviceTask>
            <bpmn:boundaryEvent id="b" attachedToRef="t" cancelActivity="false">
              <bpmn:timerEventDefinition><bpmn:timeCycle>R/PT1H</bpmn:timeCycle></bpmn:timerEventDefinition>
            </bpmn:boundaryEvent>
            <bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>
            <bpmn:sequenceFlow id="f3" sourceRef="b" targetRef="e2"/>
            <bpmn:endEvent id="e"/><bpmn:endEvent id="e2"/>""",
            MESSAGE,
        )
    )
    assert process.start_event == "" and process.event_starts == ("s",)
    start = process.element("s")
    assert isinstance(start, EventNode) and start.message is not None
    assert start.message.name == "paid"  # a process start ignores the correlation key
    boundary = process.element("b")
    assert isinstance(boundary, EventNode) and boundary.timer is not None
    assert (boundary.attached_to, boundary.interrupting) == ("t", False)
    assert (boundary.element_type, boundary.event_type) == (
        BpmnElementType.BOUNDARY_EVENT,
        BpmnEventType.TIMER,
    )
    assert process.boundaries == {"t": ("b",)}
    assert [e.id for e in process.events_of("t")] == ["b"]


def test_invalid_events_are_reported_together() -> None:
    problems = _problems(
        _definitions(
            """<bpmn:startEvent id="s"/>
            <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="g"/>
            <bpmn:eventBasedGateway id="g"/>
            <bpmn:sequenceFlow id="f2" sourceRef="g" targetRef="task"/>
            <bpmn:task id="task"/>
            <bpmn:sequenceFlow id="f3" sourceRef="task" targetRef="c"/>
            <bpmn:intermediateCatchEvent id="c"><bpmn:messageEventDefinition messageRef="nokey"/>
            </bpmn:intermediateCatchEvent>
            <bpmn:sequenceFlow id="f4" sourceRef="c" targetRef="w"/>
            <bpmn:intermediateCatchEvent id="w">
              <bpmn:timerEventDefinition/></bpmn:intermediateCatchEvent>
            <bpmn:sequenceFlow id="f5" sourceRef="w" targetRef="e"/>
            <bpmn:boundaryEvent id="b" attachedToRef="task">
              <bpmn:messageEventDefinition messageRef="m"/></bpmn:boundaryEvent>
            <bpmn:sequenceFlow id="f6" sourceRef="b" targetRef="e"/>
            <bpmn:endEvent id="e"/>""",
            MESSAGE + '<bpmn:message id="nokey" name="x"/>',
        )
    )
    assert "g: an event-based gateway needs two or more outgoing flows" in problems
    assert any(p.startswith("f2: an event-based gateway's flows must lead to") for p in problems)
    assert "c: message 'nokey' needs <zeebe:subscription correlationKey=\"...\"/>" in problems
    assert "w: a timer needs exactly one of timeDuration, timeDate, timeCycle" in problems
    assert any(
        p.startswith("b: boundary events can be attached to service and receive") for p in problems
    )


def test_iso_8601_durations_dates_and_cycles() -> None:
    start = _ms("2026-01-31T10:00:00")
    assert after("PT10S", start) == start + 10_000
    assert after("P1DT2H30M", start) == start + (26 * 60 + 30) * 60_000
    assert after("P2W", start) == start + 14 * 86_400_000
    assert after("P1M", start) == _ms("2026-02-28T10:00:00")  # calendar months
    assert after("PT0.5S", start) == start + 500
    assert date("2026-12-01T08:00:00Z") == _ms("2026-12-01T08:00:00")
    assert date("2026-12-01T09:00:00+01:00") == _ms("2026-12-01T08:00:00")
    assert cycle("R3/PT10S").repetitions == 3
    assert cycle("R/PT1H").repetitions == -1  # without end
    with_start = cycle("R2/2026-12-01T08:00:00Z/P1D")
    assert (with_start.start, with_start.interval) == (_ms("2026-12-01T08:00:00"), "P1D")
    assert first_due("cycle", "R/PT1H", start) == (start + 3_600_000, -1)
    for bad, kind in [
        ("10s", "duration"),
        ("PT", "duration"),
        ("2026-12-01T08:00:00", "date"),
        ("R0/PT1S", "cycle"),
        ("R3/soon", "cycle"),
        ("every day", "cycle"),
    ]:
        with pytest.raises(ScheduleError):
            first_due(kind, bad, start)
