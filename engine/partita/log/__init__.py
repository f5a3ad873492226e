"""Thin confluent-kafka wrappers: admin, topics, and (later) consumer and transactional producer.

Besides `stream/`, this is the only package that talks to Kafka.
"""
