"""Errors of BPMN parsing and validation."""

from __future__ import annotations

from dataclasses import dataclass

from partita.errors import PartitaError


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a resource: the element it is about (or the line) and why."""

    element_id: str
    reason: str

    def __str__(self) -> str:
        return f"{self.element_id}: {self.reason}"


class BpmnError(PartitaError):
    """Base of BPMN errors."""


class BpmnValidationError(BpmnError):
    """The resource is not an executable BPMN model; `problems` lists every reason."""

    def __init__(self, resource_name: str, problems: list[Problem]) -> None:
        self.resource_name = resource_name
        self.problems = problems
        listed = "; ".join(str(p) for p in problems)
        super().__init__(f"'{resource_name}' is not a valid executable BPMN model: {listed}")
