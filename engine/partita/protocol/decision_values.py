"""The values of the decision records (DECISION, DECISION_REQUIREMENTS, DECISION_EVALUATION)
and the decisions a deployment lists: the msgspec structs of the Avro schema's records, as
`partita.protocol.values` holds the others (and re-exports these)."""

from __future__ import annotations

from msgspec import Struct


class DecisionMetadata(Struct, frozen=True, gc=False):
    """A decision created or found by a deployment."""

    decision_id: str = ""
    decision_name: str = ""
    version: int = -1
    version_tag: str = ""
    decision_key: int = -1
    decision_requirements_id: str = ""
    decision_requirements_key: int = -1
    is_duplicate: bool = False
    tenant_id: str = "<default>"
    deployment_key: int = -1


class DecisionRequirementsMetadata(Struct, frozen=True, gc=False):
    """A decision requirements graph (a .dmn resource) created or found by a deployment."""

    decision_requirements_id: str = ""
    decision_requirements_name: str = ""
    decision_requirements_version: int = -1
    decision_requirements_key: int = -1
    namespace: str = ""
    resource_name: str = ""
    checksum: bytes = b""
    is_duplicate: bool = False
    tenant_id: str = "<default>"


class DecisionValue(Struct, frozen=True, gc=False):
    """A deployed decision (one `decision` of a DMN resource)."""

    decision_id: str = ""
    decision_name: str = ""
    version: int = -1
    version_tag: str = ""
    decision_key: int = -1
    decision_requirements_id: str = ""
    decision_requirements_key: int = -1
    is_duplicate: bool = False
    tenant_id: str = "<default>"
    deployment_key: int = -1


class DecisionRequirementsValue(Struct, frozen=True, gc=False):
    """A deployed decision requirements graph (a `.dmn` resource)."""

    decision_requirements_id: str = ""
    decision_requirements_name: str = ""
    decision_requirements_version: int = -1
    decision_requirements_key: int = -1
    namespace: str = ""
    resource_name: str = ""
    checksum: bytes = b""
    resource: bytes = b""
    is_duplicate: bool = False
    tenant_id: str = "<default>"


class EvaluatedOutput(Struct, frozen=True, gc=False):
    output_id: str = ""
    output_name: str = ""
    output_value: str = "null"


class MatchedRule(Struct, frozen=True, gc=False):
    rule_id: str = ""
    rule_index: int = -1
    evaluated_outputs: tuple[EvaluatedOutput, ...] = ()


class EvaluatedInput(Struct, frozen=True, gc=False):
    input_id: str = ""
    input_name: str = ""
    input_value: str = "null"


class EvaluatedDecision(Struct, frozen=True, gc=False):
    """One decision evaluated (the one asked for, or one it requires)."""

    decision_id: str = ""
    decision_name: str = ""
    decision_key: int = -1
    decision_version: int = -1
    decision_type: str = ""
    decision_output: str = "null"
    evaluated_inputs: tuple[EvaluatedInput, ...] = ()
    matched_rules: tuple[MatchedRule, ...] = ()
    decision_evaluation_instance_key: str = ""
    tenant_id: str = "<default>"


class DecisionEvaluationValue(Struct, frozen=True, gc=False):
    """A decision evaluated, by a business rule task or on request (EvaluateDecision)."""

    decision_key: int = -1
    decision_id: str = ""
    decision_name: str = ""
    decision_version: int = -1
    decision_requirements_id: str = ""
    decision_requirements_key: int = -1
    decision_output: str = "null"
    variables: str = "{}"
    bpmn_process_id: str = ""
    process_definition_key: int = -1
    process_instance_key: int = -1
    element_id: str = ""
    element_instance_key: int = -1
    evaluated_decisions: tuple[EvaluatedDecision, ...] = ()
    evaluation_failure_message: str = ""
    failed_decision_id: str = ""
    tenant_id: str = "<default>"
