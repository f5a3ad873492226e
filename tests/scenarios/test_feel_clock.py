"""FEEL's `now()` and `today()` in the engine: the time of the command being processed, so a
due date or a timer written as an expression lands where the records' timestamps say, and
replay (checked by the fixture after every scenario) rebuilds the same state."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from partita.protocol.intents import TimerIntent, UserTaskIntent
from tests.support.scenario_steps import all_events, create, deploy, steps

DATES = b"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d" targetNamespace="t">
  <bpmn:process id="feel-dates" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="settle" />
    <bpmn:intermediateCatchEvent id="settle">
      <bpmn:timerEventDefinition>
        <bpmn:timeDate>=now() + duration("PT1H")</bpmn:timeDate>
      </bpmn:timerEventDefinition>
    </bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="settle" targetRef="review" />
    <bpmn:userTask id="review">
      <bpmn:extensionElements>
        <zeebe:userTask />
        <zeebe:taskSchedule dueDate="=now() + duration(&quot;P2D&quot;)"
          followUpDate="=date and time(today(), time(&quot;09:00:00Z&quot;)) + @&quot;P1D&quot;"/>
      </bpmn:extensionElements>
    </bpmn:userTask>
  </bpmn:process>
</bpmn:definitions>
"""


def _at(epoch_ms: int) -> datetime:
    return datetime.fromtimestamp(epoch_ms / 1000, UTC)


def test_now_is_the_time_of_the_command_that_evaluates_it(engine: Any) -> None:
    deploy(engine, "feel-dates.bpmn", content={"feel-dates.bpmn": DATES})
    instance = create(engine, "feel-dates")
    (timer,) = [r for r in all_events(engine) if r.intent is TimerIntent.CREATED]
    assert timer.value.due_date == timer.timestamp + 3_600_000

    engine.advance(3601)
    assert ("settle", "ELEMENT_COMPLETED") in steps(engine, instance)
    (task,) = [r for r in all_events(engine) if r.intent is UserTaskIntent.CREATED]
    created = _at(task.timestamp)
    assert datetime.fromisoformat(task.value.due_date) == created + timedelta(days=2)
    follow_up = datetime.fromisoformat(task.value.follow_up_date)
    assert follow_up == datetime.combine(
        created.date() + timedelta(days=1), datetime.min.time(), UTC
    ) + timedelta(hours=9)
