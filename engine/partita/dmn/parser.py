"""DMN XML (1.1 to 1.5, as Camunda Modeler saves it) -> a validated `Drg`, reporting every
problem at once. Decision tables and literal expressions are supported; every FEEL expression
and unary test is compiled here, so a deployed decision never fails to parse later."""

from __future__ import annotations

from partita.bpmn.errors import BpmnValidationError
from partita.bpmn.xml import Node, parse_xml
from partita.dmn.model import Decision, DecisionTable, Drg, Input, LiteralExpression, Output, Rule
from partita.dmn.unary import UnaryTestError, compile_tests
from partita.errors import PartitaError
from partita.feel import FeelError, compile_expression

NAMESPACES = frozenset(
    {
        "http://www.omg.org/spec/DMN/20151101/dmn.xsd",
        "http://www.omg.org/spec/DMN/20180521/MODEL/",
        "https://www.omg.org/spec/DMN/20191111/MODEL/",
        "https://www.omg.org/spec/DMN/20211108/MODEL/",
        "https://www.omg.org/spec/DMN/20230324/MODEL/",
    }
)
ZEEBE = "{http://camunda.org/schema/zeebe/1.0}"
HIT_POLICIES = ("UNIQUE", "FIRST", "PRIORITY", "ANY", "COLLECT", "RULE ORDER", "OUTPUT ORDER")
AGGREGATIONS = ("SUM", "MIN", "MAX", "COUNT")


class DmnError(PartitaError):
    """A DMN resource that cannot be deployed: every problem, each with where it is."""

    def __init__(self, resource_name: str, problems: list[str]) -> None:
        super().__init__(f"'{resource_name}' is not a valid DMN model: " + "; ".join(problems))
        self.problems = problems


def parse_dmn(data: bytes, resource_name: str = "resource.dmn") -> Drg:
    try:
        root = parse_xml(data, resource_name)
    except BpmnValidationError as error:
        raise DmnError(resource_name, [str(p) for p in error.problems]) from None
    if root.local != "definitions" or root.namespace not in NAMESPACES:
        raise DmnError(resource_name, ["the root element must be a DMN 1.1-1.5 definitions"])
    ns = "{" + root.namespace + "}"
    problems: list[str] = []
    decisions: dict[str, Decision] = {}
    for node in root.find_all(ns + "decision"):
        decision = _decision(node, ns, problems)
        if decision is not None:
            if decision.id in decisions:
                problems.append(f"{decision.id}: the decision id is used twice")
            decisions[decision.id] = decision
    if not decisions and not problems:
        problems.append("no decision")
    for decision in decisions.values():
        for required in decision.required:
            if required not in decisions:
                problems.append(f"{decision.id}: requires '{required}', which is not a decision")
    if not problems and _has_cycle(decisions):
        problems.append("Cyclic dependencies between decisions detected.")
    if problems:
        raise DmnError(resource_name, problems)
    return Drg(
        root.attributes.get("id", ""),
        root.attributes.get("name", ""),
        root.attributes.get("namespace", ""),
        decisions,
    )


def _text(node: Node | None, ns: str) -> str:
    found = node.find(ns + "text") if node is not None else None
    return found.text.strip() if found is not None else ""


def _decision(node: Node, ns: str, problems: list[str]) -> Decision | None:
    decision_id = node.attributes.get("id", "")
    if not decision_id:
        problems.append(f"line {node.line}: a decision needs an id")
        return None
    variable = node.find(ns + "variable")
    result_name = (
        variable.attributes.get("name", "") if variable is not None else ""
    ) or decision_id
    required = tuple(
        href.removeprefix("#")
        for requirement in node.find_all(ns + "informationRequirement")
        for reference in requirement.find_all(ns + "requiredDecision")
        if (href := reference.attributes.get("href", ""))
    )
    table = node.find(ns + "decisionTable")
    literal = node.find(ns + "literalExpression")
    logic: DecisionTable | LiteralExpression | None
    if table is not None:
        logic = _table(decision_id, table, ns, problems)
    elif literal is not None:
        text = _text(literal, ns)
        if not text:
            problems.append(f"{decision_id}: The expression '{decision_id}' must not be empty.")
        _check_expression(decision_id, text, problems)
        logic = LiteralExpression(text)
    else:
        problems.append(
            f"{decision_id}: only decision tables and literal expressions are supported"
        )
        logic = None
    if logic is None:
        return None
    extensions = node.find(ns + "extensionElements")
    tag = extensions.find(ZEEBE + "versionTag") if extensions is not None else None
    version_tag = tag.attributes.get("value", "").strip() if tag is not None else ""
    name = node.attributes.get("name", "")
    return Decision(decision_id, name, logic, result_name, required, version_tag)


def _table(decision_id: str, node: Node, ns: str, problems: list[str]) -> DecisionTable | None:
    policy = node.attributes.get("hitPolicy", "UNIQUE").strip() or "UNIQUE"
    aggregation = node.attributes.get("aggregation", "").strip()
    where = decision_id
    if policy not in HIT_POLICIES:
        problems.append(f"{where}: unknown hit policy '{policy}'")
    if aggregation and (policy != "COLLECT" or aggregation not in AGGREGATIONS):
        problems.append(
            f"{where}: aggregation '{aggregation}' needs COLLECT and one of SUM, MIN, MAX, COUNT"
        )
    inputs = []
    for item in node.find_all(ns + "input"):
        expression = _text(item.find(ns + "inputExpression"), ns)
        if not expression:
            problems.append(
                f"{where}: The expression '{item.attributes.get('id', '')}' must not be empty."
            )
        _check_expression(where, expression, problems)
        inputs.append(
            Input(item.attributes.get("id", ""), item.attributes.get("label", ""), expression)
        )
    outputs = []
    for item in node.find_all(ns + "output"):
        values = _text(item.find(ns + "outputValues"), ns)
        priorities = tuple(v.strip().strip('"') for v in values.split(",") if v.strip())
        default = _text(item.find(ns + "defaultOutputEntry"), ns)
        if default:
            _check_expression(where, default, problems)
        outputs.append(
            Output(
                item.attributes.get("id", ""),
                item.attributes.get("label", ""),
                item.attributes.get("name", ""),
                priorities,
                default,
            )
        )
    if not outputs:
        problems.append(f"{where}: a decision table needs an output")
    if len(outputs) > 1:
        for output in outputs:
            if not output.name:
                problems.append(
                    f"{where}: no output name defined for `{output.label or output.id}`"
                )
        if aggregation:
            problems.append(
                f"{where}: hit policy 'COLLECT' with aggregator is not defined for compound output"
            )
    rules = []
    for index, item in enumerate(node.find_all(ns + "rule"), start=1):
        entries = tuple(_text(e, ns) for e in item.find_all(ns + "inputEntry"))
        results = tuple(_text(e, ns) for e in item.find_all(ns + "outputEntry"))
        rule_id = item.attributes.get("id", f"rule {index}")
        if len(entries) != len(inputs) or len(results) != len(outputs):
            problems.append(
                f"{where}: rule {rule_id} has {len(entries)} input and {len(results)} output"
                f" entries for {len(inputs)} inputs and {len(outputs)} outputs"
            )
            continue
        for entry in entries:
            try:
                compile_tests(entry)
            except UnaryTestError as error:
                problems.append(f"{where}: rule {rule_id}: FEEL unary-tests: {error}")
        for result in results:
            if result:
                _check_expression(f"{where}: rule {rule_id}", result, problems)
        rules.append(Rule(rule_id, index, entries, results))
    return DecisionTable(tuple(inputs), tuple(outputs), tuple(rules), policy, aggregation)


def _check_expression(where: str, text: str, problems: list[str]) -> None:
    if not text:
        return
    try:
        compile_expression("=" + text)
    except FeelError as error:
        problems.append(f"{where}: FEEL expression '{text}': {error.reason}")


def _has_cycle(decisions: dict[str, Decision]) -> bool:
    state: dict[str, int] = {}

    def visit(decision_id: str) -> bool:
        if state.get(decision_id) == 1:
            return True
        if state.get(decision_id) == 2:
            return False
        state[decision_id] = 1
        if any(visit(r) for r in decisions[decision_id].required):
            return True
        state[decision_id] = 2
        return False

    return any(visit(d) for d in decisions)
