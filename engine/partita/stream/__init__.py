"""The stream layer: partition tasks, the replay and processing state machines, the worker.

Besides `log/`, the only package that talks to Kafka.
"""
