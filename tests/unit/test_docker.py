"""docker/: the compose file only uses `partita` subcommands that exist, and the image installs
the package the way the README does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from engine.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]


def _compose() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
    return document


def _partita_services() -> dict[str, dict[str, Any]]:
    return {
        name: service
        for name, service in _compose()["services"].items()
        if service.get("image", "").startswith("partita")
    }


def test_compose_has_kafka_a_topics_job_and_workers() -> None:
    services = _compose()["services"]
    assert services["kafka"]["image"].startswith("apache/kafka:")
    assert services["kafka"]["environment"]["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert set(_partita_services()) == {"topics", "worker", "analytics", "exporter"}
    assert _partita_services()["worker"]["deploy"]["replicas"] >= 2


def test_every_partita_command_in_compose_exists_in_the_cli() -> None:
    parser = build_parser()
    commands = {name: s["command"] for name, s in _partita_services().items()}
    assert commands["topics"] == ["topics", "apply"] and commands["worker"] == ["worker"]
    assert commands["analytics"][0] == "analytics" and commands["exporter"][0] == "export"
    for command in commands.values():
        args = parser.parse_args(command)  # argparse exits on an unknown subcommand
        assert callable(args.func)


def test_truncation_waits_for_the_downstream_services() -> None:
    worker = _partita_services()["worker"]["environment"]
    groups = worker["PARTITA_DOWNSTREAM_GROUPS"].split(",")
    assert groups == ["partita.analytics", "partita.export"]


def test_engine_services_point_at_the_compose_kafka() -> None:
    kafka = _compose()["services"]["kafka"]["environment"]
    for service in _partita_services().values():
        bootstrap = service["environment"]["KAFKA_BOOTSTRAP_SERVERS"]
        assert f"INTERNAL://{bootstrap}" in kafka["KAFKA_ADVERTISED_LISTENERS"]


def test_dockerfile_installs_like_the_readme_and_runs_partita() -> None:
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "scripts/setup" in dockerfile
    assert "scripts/setup" in readme
    assert 'ENTRYPOINT ["partita"]' in dockerfile
    for folder in ("engine/", "avro/", "topics/", "scripts/"):
        assert f"COPY {folder} {folder}" in dockerfile
