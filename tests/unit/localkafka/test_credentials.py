"""The secured local broker's client properties files read back as the intended librdkafka
settings, and its secrets stay private and survive a restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from partita.config import Config, KafkaRole
from partita.localkafka.credentials import ADMIN, USERS, ClientFiles, Login, Secrets, user_of
from partita.log.security import kafka_access


@pytest.fixture
def secrets() -> Secrets:
    return Secrets.new()


@pytest.fixture
def files(tmp_path: Path, secrets: Secrets) -> ClientFiles:
    files = ClientFiles(tmp_path / "clients")
    files.write(
        sasl_bootstrap="127.0.0.1:9094",
        mtls_bootstrap="127.0.0.1:9095",
        ca_pem=tmp_path / "tls" / "ca.pem",
        keystores={user: tmp_path / "tls" / f"{user}.p12" for user in USERS},
        secrets=secrets,
    )
    return files


def test_there_is_an_admin_and_one_user_per_role() -> None:
    assert set(USERS) == {ADMIN, *(user_of(role) for role in KafkaRole)}
    assert user_of(KafkaRole.JOB_WORKER) == "job-worker"


@pytest.mark.parametrize("login", [Login.SCRAM_SHA_512, Login.SCRAM_SHA_256, Login.PLAIN])
@pytest.mark.parametrize("user", USERS)
def test_a_sasl_file_translates_to_its_user_mechanism_and_ca(
    files: ClientFiles, secrets: Secrets, tmp_path: Path, user: str, login: Login
) -> None:
    path = files.path(user, login)
    access = kafka_access(Config.from_env({"PARTITA_KAFKA_CONFIG": str(path)}), KafkaRole.ENGINE)
    assert access.bootstrap == "127.0.0.1:9094"
    assert access.librdkafka == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": login.mechanism,
        "sasl.username": user,
        "sasl.password": secrets.passwords[user],
        "ssl.ca.location": str(tmp_path / "tls" / "ca.pem"),
    }
    assert access.sources == (path,)


@pytest.mark.parametrize("user", USERS)
def test_an_mtls_file_translates_to_its_pkcs12_keystore(
    files: ClientFiles, secrets: Secrets, tmp_path: Path, user: str
) -> None:
    path = files.path(user, Login.MTLS)
    access = kafka_access(Config.from_env({"PARTITA_KAFKA_CONFIG": str(path)}), KafkaRole.ENGINE)
    assert access.bootstrap == "127.0.0.1:9095"
    assert access.librdkafka == {
        "security.protocol": "SSL",
        "ssl.keystore.location": str(tmp_path / "tls" / f"{user}.p12"),
        "ssl.keystore.password": secrets.keystores[user],
        "ssl.ca.location": str(tmp_path / "tls" / "ca.pem"),
    }


def test_the_recommended_file_of_a_role_is_scram_sha_512(files: ClientFiles) -> None:
    assert files.role(KafkaRole.ANALYTICS) == files.folder / "analytics.properties"
    assert files.admin == files.folder / "admin.properties"
    assert "sasl.mechanism=SCRAM-SHA-512" in files.admin.read_text()


def test_the_files_only_their_owner_can_read(files: ClientFiles) -> None:
    assert files.folder.stat().st_mode & 0o777 == 0o700
    for path in files.folder.iterdir():
        assert path.stat().st_mode & 0o777 == 0o600, path


def test_secrets_are_private_and_read_back(tmp_path: Path, secrets: Secrets) -> None:
    path = tmp_path / "secrets.json"
    secrets.save(path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert Secrets.load(path) == secrets
    assert len(set(secrets.passwords.values())) == len(USERS)


def test_missing_or_damaged_secrets_are_none(tmp_path: Path) -> None:
    assert Secrets.load(tmp_path / "absent.json") is None
    (tmp_path / "damaged.json").write_text('{"passwords": {"admin": "x"}, "keystores": {}}')
    assert Secrets.load(tmp_path / "damaged.json") is None


def test_a_role_file_over_the_admin_file_logs_that_role_in(files: ClientFiles) -> None:
    env = {
        "PARTITA_KAFKA_CONFIG": str(files.admin),
        KafkaRole.ENGINE.variable: str(files.role(KafkaRole.ENGINE)),
    }
    config = Config.from_env(env)
    assert kafka_access(config, KafkaRole.ENGINE).username == "engine"
    assert kafka_access(config, KafkaRole.OPERATOR).username == ADMIN
