"""docker/: the compose files only use `partita` subcommands that exist, and the image installs
the package the way the README does. compose.secure.yaml, the secured variant, leaves Kafka no
unauthenticated listener, enforces ACLs and gives each service its own principal and only its
own credentials; its secrets script is run here to check the files it writes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from partita.cli import build_parser
from partita.config import Config, KafkaRole
from partita.log.properties import read_properties
from partita.log.security import kafka_access
from tests.support.paths import ROOT

PLAIN = "compose.yaml"
SECURE = "compose.secure.yaml"
ROLE_OF_SERVICE = {
    "acls": None,  # the super user admin
    "topics": KafkaRole.OPERATOR,
    "worker": KafkaRole.ENGINE,
    "analytics": KafkaRole.ANALYTICS,
    "exporter": KafkaRole.EXPORTER,
    "gateway": KafkaRole.GATEWAY,
}


def _compose(name: str = PLAIN) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((ROOT / "docker" / name).read_text())
    return document


def _partita_services(name: str = PLAIN) -> dict[str, dict[str, Any]]:
    return {
        service_name: service
        for service_name, service in _compose(name)["services"].items()
        if service.get("image", "").startswith("partita")
    }


def _commands(name: str) -> list[list[str]]:
    """Every `partita` command line of the file; the acls loop gives one per role."""
    commands = []
    for service in _partita_services(name).values():
        if service.get("entrypoint") == ["sh", "-c"]:
            loop = re.fullmatch(
                r"for role in ([\w -]+); do partita (.+?) \|\| exit 1; done", service["command"][0]
            )
            assert loop is not None, service["command"]
            for role in loop.group(1).split():
                line = loop.group(2).replace("$$role", role).replace('"', "")
                commands.append(line.split())
        else:
            commands.append(service["command"])
    return commands


@pytest.mark.parametrize("name", [PLAIN, SECURE])
def test_compose_has_kafka_a_topics_job_workers_and_a_gateway(name: str) -> None:
    services = _compose(name)["services"]
    assert services["kafka"]["image"].startswith("apache/kafka:")
    assert services["kafka"]["environment"]["KAFKA_PROCESS_ROLES"] == "broker,controller"
    expected = {"topics", "worker", "analytics", "exporter", "gateway"} | (
        {"acls"} if name == SECURE else set()
    )
    assert set(_partita_services(name)) == expected
    assert _partita_services(name)["worker"]["deploy"]["replicas"] >= 2


@pytest.mark.parametrize("name", [PLAIN, SECURE])
def test_every_partita_command_in_compose_exists_in_the_cli(name: str) -> None:
    parser = build_parser()
    services = _partita_services(name)
    # the exporter only checks its topics: `topics apply --export` creates them
    assert services["topics"]["command"] == ["topics", "apply", "--export"]
    assert services["worker"]["command"] == ["worker"]
    assert services["analytics"]["command"][0] == "analytics"
    assert services["exporter"]["command"][0] == "export"
    for command in _commands(name):
        args = parser.parse_args(command)  # argparse exits on an unknown subcommand
        assert callable(args.func)


@pytest.mark.parametrize("name", [PLAIN, SECURE])
def test_truncation_waits_for_the_downstream_services(name: str) -> None:
    worker = _partita_services(name)["worker"]["environment"]
    groups = worker["PARTITA_DOWNSTREAM_GROUPS"].split(",")
    assert groups == ["partita.analytics", "partita.export"]


@pytest.mark.parametrize("name", [PLAIN, SECURE])
def test_engine_services_point_at_the_compose_kafka(name: str) -> None:
    kafka = _compose(name)["services"]["kafka"]["environment"]
    for service in _partita_services(name).values():
        bootstrap = service["environment"]["KAFKA_BOOTSTRAP_SERVERS"]
        assert f"INTERNAL://{bootstrap}" in kafka["KAFKA_ADVERTISED_LISTENERS"]


def test_the_plain_analytics_page_is_published_on_the_hosts_loopback_only() -> None:
    analytics = _partita_services(PLAIN)["analytics"]
    assert analytics["ports"] == ["127.0.0.1:6066:6066"]
    assert analytics["environment"]["PARTITA_ANALYTICS_TOKEN"] == "${PARTITA_ANALYTICS_TOKEN:-}"


def test_dockerfile_installs_like_the_readme_and_runs_partita() -> None:
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "scripts/setup" in dockerfile
    assert "scripts/setup" in readme
    assert 'ENTRYPOINT ["partita"]' in dockerfile
    for folder in ("engine/", "avro/", "topics/", "scripts/"):
        assert f"COPY {folder} {folder}" in dockerfile


# -- the secured variant ------------------------------------------------------------------------


def _kafka_settings() -> dict[str, str]:
    """The secured broker's KAFKA_* variables as the properties the apache/kafka image makes of
    them (`KAFKA_A_B` is `a.b`; none of these keys has a dash or an underscore)."""
    environment = _compose(SECURE)["services"]["kafka"]["environment"]
    assert not any("__" in key for key in environment)
    return {
        key.removeprefix("KAFKA_").lower().replace("_", "."): str(value)
        for key, value in environment.items()
    }


def test_the_secured_kafka_has_no_listener_without_sasl_and_tls_and_enforces_acls() -> None:
    settings = _kafka_settings()
    protocols = dict(
        pair.split(":") for pair in settings["listener.security.protocol.map"].split(",")
    )
    assert set(protocols.values()) == {"SASL_SSL"}
    listeners = {item.split("://")[0] for item in settings["listeners"].split(",")}
    assert listeners == set(protocols) == {"INTERNAL", "EXTERNAL", "CONTROLLER"}
    assert "SSL://" not in settings["advertised.listeners"]  # the image's own SSL set-up stays off
    assert "SASL_" not in settings["advertised.listeners"]
    assert settings["authorizer.class.name"].endswith("StandardAuthorizer")
    assert settings["allow.everyone.if.no.acl.found"] == "false"
    assert settings["super.users"] == "User:admin;User:broker"
    for listener in ("internal", "external"):
        mechanisms = settings[f"listener.name.{listener}.sasl.enabled.mechanisms"].split(",")
        assert "SCRAM-SHA-512" in mechanisms
    assert settings["listener.name.external.sasl.enabled.mechanisms"] == "SCRAM-SHA-512"


def _secret_mounts(service: dict[str, Any]) -> dict[str, str]:
    """Mount point -> named volume, for the service's `*-secrets` volumes."""
    mounts = {}
    for volume in service.get("volumes", []):
        source, target, *mode = volume.split(":")
        if source.endswith("-secrets"):
            mounts[target] = source
            if target.startswith("/etc/partita") or target == "/mnt/shared/config":
                assert mode == ["ro"], volume
    return mounts


def test_each_secured_service_mounts_only_its_own_credentials() -> None:
    services = _compose(SECURE)["services"]
    users: dict[str, set[str]] = {}
    for name, service in services.items():
        for volume in _secret_mounts(service).values():
            users.setdefault(volume, set()).add(name)
    for name, role in ROLE_OF_SERVICE.items():
        service = services[name]
        path = Path(service["environment"]["PARTITA_KAFKA_CONFIG"])
        mounts = _secret_mounts(service)
        assert list(mounts) == [str(path.parent)], name
        volume = mounts[str(path.parent)]
        assert volume == f"{role.value if role else 'admin'}-secrets", name
        assert users[volume] == {"secrets", name}, f"{volume} is mounted by {users[volume]}"
    assert users["kafka-secrets"] == {"secrets", "kafka", "users"}
    assert users["application-secrets"] == {"secrets"}
    analytics = services["analytics"]["environment"]
    assert analytics["PARTITA_ANALYTICS_TOKEN"].startswith("${PARTITA_ANALYTICS_TOKEN:?")


def test_the_secured_start_runs_in_order_and_grants_every_role_its_acls() -> None:
    services = _compose(SECURE)["services"]

    def after(name: str) -> dict[str, str]:
        return {k: v["condition"] for k, v in services[name].get("depends_on", {}).items()}

    assert after("kafka") == {"secrets": "service_completed_successfully"}
    assert after("users") == {"kafka": "service_healthy"}
    assert after("acls") == {"users": "service_completed_successfully"}
    assert after("topics") == {"acls": "service_completed_successfully"}
    for name in ("worker", "analytics", "exporter"):
        assert after(name) == {"topics": "service_completed_successfully"}
    acls = [c for c in _commands(SECURE) if c[0] == "acls"]
    assert {c[c.index("--role") + 1] for c in acls} == {role.value for role in KafkaRole}
    for command in acls:
        role = command[command.index("--role") + 1]
        assert command[command.index("--principal") + 1] == f"User:{role}"
        assert "--apply" in command
    for name in ("secrets", "users"):
        script = services[name]["entrypoint"][-1]
        assert script.startswith("/opt/partita/secure/")
        assert "./secure:/opt/partita/secure:ro" in services[name]["volumes"]
        assert (ROOT / "docker" / "secure" / Path(script).name).is_file()


@pytest.fixture(scope="module")
def secrets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What docker/secure/make-secrets.sh writes, run here as in the `secrets` service."""
    if shutil.which("bash") is None or shutil.which("keytool") is None:
        pytest.fail("make-secrets.sh needs bash and the JDK's keytool: install them")
    out = tmp_path_factory.mktemp("compose-secrets")
    script = ROOT / "docker" / "secure" / "make-secrets.sh"
    env = {**os.environ, "OUT": str(out)}
    run = subprocess.run(["bash", script], env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    again = subprocess.run(["bash", script], env=env, capture_output=True, text=True, check=True)
    assert "keeping them" in again.stdout  # a restart keeps the passwords the broker knows
    return out


def test_the_secrets_give_every_service_a_login_partita_reads(secrets: Path) -> None:
    services = _compose(SECURE)["services"]
    made = {Path(t).name: v for t, v in _secret_mounts(services["secrets"]).items()}
    assert sorted(made) == sorted(p.name for p in secrets.iterdir())
    users = dict(
        line.split() for line in (secrets / "kafka" / "scram-users").read_text().splitlines()
    )
    assert set(users) == {role.value for role in KafkaRole}
    folder_of_volume = {volume: secrets / folder for folder, volume in made.items()}
    for name, role in ROLE_OF_SERVICE.items():
        (volume,) = _secret_mounts(services[name]).values()
        folder = folder_of_volume[volume]
        assert (folder / "ca.pem").read_text().startswith("-----BEGIN CERTIFICATE-----")
        config = Config(bootstrap_servers="kafka:19092", kafka_config=folder / "client.properties")
        access = kafka_access(config, role or KafkaRole.OPERATOR)
        assert access.protocol == "SASL_SSL"
        assert access.librdkafka["ssl.ca.location"] == "/etc/partita/kafka/ca.pem"
        if role is None:
            assert (access.mechanism, access.username) == ("PLAIN", "admin")
        else:
            assert (access.mechanism, access.username) == ("SCRAM-SHA-512", role.value)
            assert access.librdkafka["sasl.password"] == users[role.value]
    for role in (KafkaRole.CLIENT, KafkaRole.JOB_WORKER):
        application = read_properties(secrets / "applications" / f"{role.value}.properties", role)
        assert application["bootstrap.servers"] == "localhost:9092"
        assert (
            f'username="{role.value}" password="{users[role.value]}"'
            in application["sasl.jaas.config"]
        )


def test_the_broker_has_a_login_for_every_mechanism_of_every_listener(secrets: Path) -> None:
    generated = read_properties(secrets / "kafka" / "server.properties", "server.properties")
    settings = {**generated, **_kafka_settings()}
    for listener in ("internal", "external", "controller"):
        for mechanism in settings[f"listener.name.{listener}.sasl.enabled.mechanisms"].split(","):
            jaas = settings[f"listener.name.{listener}.{mechanism.lower()}.sasl.jaas.config"]
            assert ("PlainLoginModule" if mechanism == "PLAIN" else "ScramLoginModule") in jaas
    inter_broker = settings["listener.name.internal.plain.sasl.jaas.config"]
    assert 'username="broker"' in inter_broker and "user_broker=" in inter_broker
    assert settings["sasl.mechanism.inter.broker.protocol"] == "PLAIN"
    assert settings["ssl.keystore.location"] == "/mnt/shared/config/broker.p12"
    _assert_broker_keystore(secrets / "kafka", generated["ssl.keystore.password"])
    admin = read_properties(secrets / "kafka" / "admin.properties", "admin.properties")
    assert admin["ssl.truststore.location"] == "/mnt/shared/config/ca.pem"
    assert f'password="{_plain_password(inter_broker, "admin")}"' in admin["sasl.jaas.config"]


def _assert_broker_keystore(folder: Path, password: str) -> None:
    """broker.p12 opens with the password server.properties gives the broker and holds the
    broker's key, its certificate signed by the CA whose certificate is ca.pem (what every
    client trusts)."""

    def keytool(*args: str) -> str:
        store = ["-keystore", str(folder / "broker.p12"), "-storetype", "PKCS12"]
        run = subprocess.run(
            ["keytool", *args, *store, "-storepass", password],
            capture_output=True,
            text=True,
            check=False,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        return run.stdout

    listing = keytool("-list", "-v", "-alias", "broker")
    assert "Entry type: PrivateKeyEntry" in listing
    assert "Certificate chain length: 2" in listing
    assert "Owner: CN=kafka\nIssuer: CN=Partita compose CA\n" in listing
    ca = keytool("-exportcert", "-rfc", "-alias", "ca")
    assert ca.split() == (folder / "ca.pem").read_text().split()


def _plain_password(jaas: str, user: str) -> str:
    match = re.search(rf'user_{user}="([^"]+)"', jaas)
    assert match is not None, jaas
    return match.group(1)
