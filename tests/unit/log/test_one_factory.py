"""Kafka clients are made in one factory module (engine/partita/log/clients.py); every other
module of the engine asks it, so security settings reach every client."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import ENGINE

CLIENT_CLASSES = {"Consumer", "Producer", "AdminClient", "AIOKafkaConsumer", "AIOKafkaProducer"}
FACTORY = ENGINE / "log" / "clients.py"


def _constructions(path: Path, text: str | None = None) -> list[str]:
    tree = ast.parse(path.read_text() if text is None else text, str(path))
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").split(".")[0] in ("confluent_kafka", "aiokafka")
        for alias in node.names
        if alias.name in CLIENT_CLASSES
    }
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if name in imported or (isinstance(func, ast.Attribute) and name in CLIENT_CLASSES):
            found.append(f"{path.name}:{node.lineno} {name}(...)")
    return found


def test_no_module_but_the_factory_constructs_a_kafka_client() -> None:
    offenders = [
        where
        for path in sorted(ENGINE.rglob("*.py"))
        if path != FACTORY
        for where in _constructions(path)
    ]
    assert offenders == [], "use partita.log.clients.new_consumer/new_producer/new_admin"


def test_the_check_sees_a_construction() -> None:
    text = (
        "from confluent_kafka import Consumer as C\nimport confluent_kafka\n"
        "C({})\nconfluent_kafka.Producer({})\n"
    )
    assert _constructions(ENGINE / "x.py", text) == ["x.py:3 C(...)", "x.py:4 Producer(...)"]
