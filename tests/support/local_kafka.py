"""What the tests that start local brokers share: free ports and the cached Kafka jars."""

from __future__ import annotations

import socket

from partita.config import Config
from partita.localkafka import KafkaDistribution


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def shared_distribution() -> KafkaDistribution:
    """The jars cached in the checkout's PARTITA_HOME, shared by every broker the tests start."""
    return KafkaDistribution(Config.from_env().home)
