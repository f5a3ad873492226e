"""A real Apache Kafka broker on 127.0.0.1 without Docker: jars from Maven Central, KRaft mode."""

from engine.localkafka.broker import BrokerError, BrokerStatus, LocalBroker
from engine.localkafka.distribution import KafkaDistribution

__all__ = ["BrokerError", "BrokerStatus", "KafkaDistribution", "LocalBroker"]
