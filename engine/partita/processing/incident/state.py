"""Incidents in state: `incident` (key -> the incident) and `incident_by_element` (element
instance -> the key of its open incident)."""

from __future__ import annotations

from partita.protocol.values import IncidentValue
from partita.state import ColumnFamilies
from partita.state.stored import Incident

INCIDENTS = ColumnFamilies.INCIDENT
BY_ELEMENT = ColumnFamilies.INCIDENT_BY_ELEMENT


def incident_value(stored: Incident) -> IncidentValue:
    return IncidentValue(
        error_type=stored.error_type,
        error_message=stored.error_message,
        element_instance_key=stored.element_instance_key,
        job_key=stored.job_key,
        process_instance_key=stored.process_instance_key,
    )
