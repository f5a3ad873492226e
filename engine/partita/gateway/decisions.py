"""Decisions as both APIs show them: a DECISION_EVALUATION event as gRPC's
EvaluateDecisionResponse or REST's EvaluateDecisionResult, and the decisions and graphs of a
deployment. A failed evaluation is an answer in both (its failure message and the decision that
failed), not an error."""

from __future__ import annotations

from typing import Any

from partita.gateway.arguments import DEFAULT_TENANT
from partita.protocol.decision_values import DecisionEvaluationValue, EvaluatedDecision
from partita.protocol.intents import DecisionEvaluationIntent
from partita.protocol.records import Record
from partita.protocol.values import DeploymentValue


def _evaluation(reply: Record) -> tuple[DecisionEvaluationValue, bool]:
    value = reply.value
    assert isinstance(value, DecisionEvaluationValue)
    return value, reply.intent is DecisionEvaluationIntent.FAILED


def grpc_evaluation(pb: Any, reply: Record) -> Any:
    value, failed = _evaluation(reply)
    return pb.EvaluateDecisionResponse(
        decisionKey=value.decision_key,
        decisionId=value.decision_id,
        decisionName=value.decision_name,
        decisionVersion=value.decision_version,
        decisionRequirementsId=value.decision_requirements_id,
        decisionRequirementsKey=value.decision_requirements_key,
        decisionOutput="" if failed else value.decision_output,
        evaluatedDecisions=[_grpc_decision(pb, d) for d in value.evaluated_decisions],
        failedDecisionId=value.failed_decision_id,
        failureMessage=value.evaluation_failure_message,
        tenantId=DEFAULT_TENANT,
        decisionInstanceKey=reply.key,
        decisionEvaluationKey=reply.key,
    )


def _grpc_decision(pb: Any, decision: EvaluatedDecision) -> Any:
    return pb.EvaluatedDecision(
        decisionKey=decision.decision_key,
        decisionId=decision.decision_id,
        decisionName=decision.decision_name,
        decisionVersion=decision.decision_version,
        decisionType=decision.decision_type,
        decisionOutput=decision.decision_output,
        matchedRules=[
            pb.MatchedDecisionRule(
                ruleId=rule.rule_id,
                ruleIndex=rule.rule_index,
                evaluatedOutputs=[
                    pb.EvaluatedDecisionOutput(
                        outputId=o.output_id, outputName=o.output_name, outputValue=o.output_value
                    )
                    for o in rule.evaluated_outputs
                ],
            )
            for rule in decision.matched_rules
        ],
        evaluatedInputs=[
            pb.EvaluatedDecisionInput(
                inputId=i.input_id, inputName=i.input_name, inputValue=i.input_value
            )
            for i in decision.evaluated_inputs
        ],
        tenantId=DEFAULT_TENANT,
        decisionEvaluationInstanceKey=decision.decision_evaluation_instance_key,
    )


def rest_evaluation(reply: Record) -> dict[str, Any]:
    value, failed = _evaluation(reply)
    return {
        "decisionDefinitionId": value.decision_id,
        "decisionDefinitionName": value.decision_name,
        "decisionDefinitionVersion": value.decision_version,
        "decisionRequirementsId": value.decision_requirements_id,
        "output": "null" if failed else value.decision_output,
        "failedDecisionDefinitionId": value.failed_decision_id or None,
        "failureMessage": value.evaluation_failure_message or None,
        "tenantId": DEFAULT_TENANT,
        "decisionDefinitionKey": str(value.decision_key),
        "decisionRequirementsKey": str(value.decision_requirements_key),
        "decisionEvaluationKey": str(reply.key),
        "decisionInstanceKey": str(reply.key),
        "evaluatedDecisions": [_rest_decision(d) for d in value.evaluated_decisions],
    }


def _rest_decision(decision: EvaluatedDecision) -> dict[str, Any]:
    return {
        "decisionDefinitionId": decision.decision_id,
        "decisionDefinitionName": decision.decision_name,
        "decisionDefinitionVersion": decision.decision_version,
        "decisionDefinitionType": decision.decision_type,
        "output": decision.decision_output,
        "tenantId": DEFAULT_TENANT,
        "matchedRules": [
            {
                "ruleId": rule.rule_id,
                "ruleIndex": rule.rule_index,
                "evaluatedOutputs": [
                    {
                        "outputId": o.output_id,
                        "outputName": o.output_name,
                        "outputValue": o.output_value,
                        "ruleId": rule.rule_id,
                        "ruleIndex": rule.rule_index,
                    }
                    for o in rule.evaluated_outputs
                ],
            }
            for rule in decision.matched_rules
        ],
        "evaluatedInputs": [
            {"inputId": i.input_id, "inputName": i.input_name, "inputValue": i.input_value}
            for i in decision.evaluated_inputs
        ],
        "decisionDefinitionKey": str(decision.decision_key),
        "decisionEvaluationInstanceKey": decision.decision_evaluation_instance_key,
    }


def grpc_deployed(pb: Any, reply: Record) -> list[Any]:
    """The decisions, then the graphs, of a deployment (gRPC `Deployment`s)."""
    value = reply.value
    assert isinstance(value, DeploymentValue)
    decisions = [
        pb.Deployment(
            decision=pb.DecisionMetadata(
                dmnDecisionId=d.decision_id,
                dmnDecisionName=d.decision_name,
                version=d.version,
                decisionKey=d.decision_key,
                dmnDecisionRequirementsId=d.decision_requirements_id,
                decisionRequirementsKey=d.decision_requirements_key,
                tenantId=d.tenant_id,
            )
        )
        for d in value.decisions_metadata
    ]
    graphs = [
        pb.Deployment(
            decisionRequirements=pb.DecisionRequirementsMetadata(
                dmnDecisionRequirementsId=g.decision_requirements_id,
                dmnDecisionRequirementsName=g.decision_requirements_name,
                version=g.decision_requirements_version,
                decisionRequirementsKey=g.decision_requirements_key,
                resourceName=g.resource_name,
                tenantId=g.tenant_id,
            )
        )
        for g in value.decision_requirements_metadata
    ]
    return decisions + graphs


def rest_deployed(value: DeploymentValue) -> list[dict[str, Any]]:
    """The decisions, then the graphs, of a deployment (REST `deployments` items)."""
    decisions: list[dict[str, Any]] = [
        {
            "decisionDefinition": {
                "decisionDefinitionId": d.decision_id,
                "version": d.version,
                "name": d.decision_name,
                "tenantId": d.tenant_id,
                "decisionRequirementsId": d.decision_requirements_id,
                "decisionDefinitionKey": str(d.decision_key),
                "decisionRequirementsKey": str(d.decision_requirements_key),
            }
        }
        for d in value.decisions_metadata
    ]
    graphs: list[dict[str, Any]] = [
        {
            "decisionRequirements": {
                "decisionRequirementsId": g.decision_requirements_id,
                "version": g.decision_requirements_version,
                "decisionRequirementsName": g.decision_requirements_name,
                "tenantId": g.tenant_id,
                "resourceName": g.resource_name,
                "decisionRequirementsKey": str(g.decision_requirements_key),
            }
        }
        for g in value.decision_requirements_metadata
    ]
    return decisions + graphs
