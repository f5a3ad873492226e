"""A real Apache Kafka broker on 127.0.0.1 without Docker: jars from Maven Central, KRaft mode.

`LocalBroker` is the plaintext broker of the README's commands; `SecureLocalBroker` the one with
TLS, SASL and ACLs enforced (`partita kafka up --secure`).
"""

from partita.localkafka.broker import BrokerError, BrokerStatus, LocalBroker
from partita.localkafka.distribution import KafkaDistribution
from partita.localkafka.secure import SecureKafka, SecureLocalBroker

__all__ = [
    "BrokerError",
    "BrokerStatus",
    "KafkaDistribution",
    "LocalBroker",
    "SecureKafka",
    "SecureLocalBroker",
]
