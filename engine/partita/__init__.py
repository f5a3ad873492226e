"""Partita: a Zeebe-style BPMN workflow engine whose replicated log is Apache Kafka."""

__version__ = "0.1.0"
