"""`partita kafka up/down/status`: a real broker from the cached Maven jars, managed by the CLI."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from partita.cli import main
from partita.config import KafkaRole
from partita.localkafka import LocalBroker
from partita.localkafka.distribution import ToolMissingError, require_java
from partita.log.admin import admin_client, answers_metadata
from partita.log.security import KafkaAccess
from tests.support.local_kafka import free_port, shared_distribution

pytestmark = pytest.mark.kafka


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Flags for a second, private broker; the jars come from the shared cache."""
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    monkeypatch.delenv("PARTITA_BOOTSTRAP_SERVERS", raising=False)
    distribution = shared_distribution()
    distribution.ensure()
    libs = distribution.libs
    (tmp_path / "kafka").mkdir()
    (tmp_path / "kafka" / libs.name).symlink_to(libs)
    return [
        "--home",
        str(tmp_path),
        "--port",
        str(free_port()),
        "--controller-port",
        str(free_port()),
    ]


def test_up_status_reuse_down_and_fast_restart_keeping_data(
    cli_env: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    port = cli_env[cli_env.index("--port") + 1]
    bootstrap = f"127.0.0.1:{port}"
    try:
        assert main(["kafka", "up", *cli_env]) == 0
        out = capsys.readouterr().out
        assert f"bootstrap.servers={bootstrap}" in out
        assert answers_metadata(KafkaAccess(bootstrap, KafkaRole.OPERATOR))

        assert main(["kafka", "up", *cli_env]) == 0
        assert "already running" in capsys.readouterr().out

        assert main(["kafka", "status", *cli_env]) == 0
        assert f"running at {bootstrap}" in capsys.readouterr().out

        assert main(["topics", "apply", *cli_env, "--namespace", "keep"]) == 0
        capsys.readouterr()

        assert main(["kafka", "down", *cli_env]) == 0
        assert "Kafka stopped." in capsys.readouterr().out
        assert not answers_metadata(KafkaAccess(bootstrap, KafkaRole.OPERATOR), timeout=1.0)
        assert main(["kafka", "status", *cli_env]) == 3
        assert "not running" in capsys.readouterr().out

        assert main(["kafka", "up", *cli_env]) == 0  # restart: no format, no resolution
        assert (
            "keep.log"
            in admin_client(KafkaAccess(bootstrap, KafkaRole.OPERATOR))
            .list_topics(timeout=10)
            .topics
        )
    finally:
        main(["kafka", "down", *cli_env])


def test_up_refuses_a_port_taken_by_another_process(
    cli_env: list[str], kafka_bootstrap: str, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = kafka_bootstrap.rsplit(":", 1)[1]
    flags = list(cli_env)
    flags[flags.index("--port") + 1] = taken

    assert main(["kafka", "up", *flags]) == 1
    err = capsys.readouterr().err
    assert f"port {taken} on 127.0.0.1 is already in use" in err
    assert "KAFKA_BOOTSTRAP_SERVERS" in err


def test_up_with_an_external_cluster_starts_nothing(
    kafka_bootstrap: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["kafka", "up", "--bootstrap-servers", kafka_bootstrap, "--home", str(tmp_path)]) == 0
    )
    assert "nothing started" in capsys.readouterr().out
    assert not (tmp_path / "kafka").exists()


def test_missing_java_says_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty PATH: no java, no mvn
    with pytest.raises(ToolMissingError, match="install a JDK or JRE 17"):
        require_java()


def test_missing_maven_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    java = Path(os.path.realpath(os.popen("command -v java").read().strip()))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "java").symlink_to(java)
    monkeypatch.setenv("PATH", str(bin_dir))
    broker = LocalBroker(tmp_path / "home", free_port(), free_port())
    with pytest.raises(ToolMissingError, match="install Maven"):
        broker.up()


def test_a_cluster_id_beginning_with_a_dash_formats(
    cli_env: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # base64url ids begin with "-" one time in 64; the storage tool must not read it as a flag
    monkeypatch.setattr("partita.localkafka.broker._kafka_uuid", lambda: "-AAAAAAAAAAAAAAAAAAAAA")
    try:
        assert main(["kafka", "up", *cli_env]) == 0
    finally:
        main(["kafka", "down", *cli_env])
