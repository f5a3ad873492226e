"""DMN decisions as Camunda Modeler saves them (DMN 1.3 to 1.5): `parse_dmn(bytes)` reads a
decision requirements graph (decision tables and literal expressions, required decisions) and
`evaluate_decision` evaluates one on the project's FEEL, with every hit policy, returning the
output and the audit Zeebe records (evaluated decisions, inputs, matched rules).

Nothing here touches Kafka or state; the XML is read with the BPMN package's safe reader."""

from partita.dmn.evaluation import DecisionFailure, EvaluatedDecision, Evaluation, evaluate_decision
from partita.dmn.model import Decision, DecisionTable, Drg, LiteralExpression
from partita.dmn.parser import DmnError, parse_dmn

__all__ = [
    "Decision",
    "DecisionFailure",
    "DecisionTable",
    "DmnError",
    "Drg",
    "EvaluatedDecision",
    "Evaluation",
    "LiteralExpression",
    "evaluate_decision",
    "parse_dmn",
]
