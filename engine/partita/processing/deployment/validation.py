"""Validating a deployment's resources: parsed as BPMN, their FEEL expressions compiled and
their static timer values scheduled, every problem of a resource reported at once."""

from __future__ import annotations

from partita.bpmn import BpmnValidationError, EventNode, Problem, Process, parse_bpmn
from partita.bpmn.schedule import ScheduleError, first_due
from partita.feel import FeelSyntaxError, compile_expression


def processes_of(resource: bytes, name: str) -> list[Process]:
    """Parse and validate a BPMN resource, its FEEL expressions and static timer values
    included, reporting every problem at once."""
    models = parse_bpmn(resource, name, check_expression=_feel_problem)
    problems = []
    for model in models:
        for element in model.elements.values():
            timer = element.timer if isinstance(element, EventNode) else None
            if timer is None or timer.expression.startswith("="):
                continue
            try:
                first_due(timer.kind, timer.expression, 0)
            except ScheduleError as error:
                problems.append(Problem(element.id, str(error)))
    if problems:
        raise BpmnValidationError(name, problems)
    return models


def _feel_problem(text: str) -> str | None:
    try:
        compile_expression(text)
    except FeelSyntaxError as error:
        return error.reason
    return None
