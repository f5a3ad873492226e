"""Incidents in state: `incident` (key -> the incident) and `incident_by_element` (element
instance -> the key of its open incident)."""

from __future__ import annotations

from engine.protocol.enums import ErrorType
from engine.protocol.values import IncidentValue
from engine.state import ColumnFamilies

INCIDENTS = ColumnFamilies.INCIDENT
BY_ELEMENT = ColumnFamilies.INCIDENT_BY_ELEMENT


def incident_value(stored: dict[str, object], record_key: int) -> IncidentValue:
    return IncidentValue(
        error_type=ErrorType[str(stored["errorType"])],
        error_message=str(stored["errorMessage"]),
        element_instance_key=int(stored["elementInstanceKey"]),  # type: ignore[call-overload]
        job_key=int(stored["jobKey"]),  # type: ignore[call-overload]
        process_instance_key=int(stored["processInstanceKey"]),  # type: ignore[call-overload]
    )
