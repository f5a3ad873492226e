"""Who may log in to the secured local broker, and ready client properties files for each.

Users: `admin` (a super user) and one user per `KafkaRole`, named like the role (`engine`,
`client`, `job-worker`, `analytics`, `exporter`, `operator`). Every user can log in with
SASL/PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (one password) and with a client certificate whose CN is
its name. Role users start without ACLs: Kafka refuses them everything but metadata until
`partita acls --apply` grants their role's.

Passwords are random, made once per broker folder, and kept in `secrets.json` (mode 0600); the
properties files, which contain them, are 0600 too.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from partita.config import KafkaRole

ADMIN = "admin"
BROKER = "broker"
"""The broker's own certificate principal (User:broker), used on its inter-broker and controller
connections; no client gets its key."""

USERS: tuple[str, ...] = (ADMIN, *(role.value for role in KafkaRole))


class Login(StrEnum):
    """How a client properties file logs in; the value is the file name's suffix."""

    SCRAM_SHA_512 = "scram-sha-512"
    SCRAM_SHA_256 = "scram-sha-256"
    PLAIN = "plain"
    MTLS = "mtls"

    @property
    def mechanism(self) -> str:
        return self.value.upper()


def user_of(role: KafkaRole) -> str:
    """The broker user that runs `role`'s clients."""
    return role.value


@dataclass(frozen=True, slots=True)
class Secrets:
    """The users' passwords and the keystores' passwords of one secured broker folder."""

    passwords: dict[str, str]
    keystores: dict[str, str]

    @classmethod
    def new(cls) -> Secrets:
        stores = (*USERS, BROKER, "ca", "untrusted-ca")
        return cls(
            passwords={user: secrets.token_urlsafe(18) for user in USERS},
            keystores={name: secrets.token_urlsafe(18) for name in stores},
        )

    @classmethod
    def load(cls, path: Path) -> Secrets | None:
        """The secrets kept at `path`, or None when there are none (or they are incomplete)."""
        try:
            data = json.loads(path.read_text())
            loaded = cls(passwords=dict(data["passwords"]), keystores=dict(data["keystores"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if set(loaded.passwords) != set(USERS):
            return None
        return loaded

    def save(self, path: Path) -> None:
        write_private(
            path, json.dumps({"passwords": self.passwords, "keystores": self.keystores}, indent=2)
        )


def write_private(path: Path, text: str) -> None:
    """Write `text` to a file only its owner can read (mode 0600 from the first byte)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        os.fchmod(file.fileno(), 0o600)
        file.write(text)


def escape_value(value: str) -> str:
    """A .properties value: backslashes doubled, a leading blank kept."""
    escaped = value.replace("\\", "\\\\")
    return "\\" + escaped if escaped[:1] in (" ", "\t") else escaped


@dataclass(frozen=True, slots=True)
class ClientFiles:
    """The client properties files of one secured broker: `<folder>/<user>.<login>.properties`,
    and `<folder>/<user>.properties` (SCRAM-SHA-512, the recommended login)."""

    folder: Path

    def path(self, user: str, login: Login = Login.SCRAM_SHA_512) -> Path:
        if login is Login.SCRAM_SHA_512:
            return self.folder / f"{user}.properties"
        return self.folder / f"{user}.{login.value}.properties"

    def role(self, role: KafkaRole, login: Login = Login.SCRAM_SHA_512) -> Path:
        return self.path(user_of(role), login)

    @property
    def admin(self) -> Path:
        return self.path(ADMIN)

    def write(
        self,
        *,
        sasl_bootstrap: str,
        mtls_bootstrap: str,
        ca_pem: Path,
        keystores: dict[str, Path],
        secrets: Secrets,
    ) -> None:
        """Every user's file for every login, replacing older ones (the ports may have moved)."""
        for user in USERS:
            for login in Login:
                lines = [
                    f"# Written by `partita kafka up --secure`: user {user} ({login.mechanism}),"
                    f" principal User:{user}. Secret: keep it private.",
                ]
                if login is Login.MTLS:
                    lines += [
                        f"bootstrap.servers={mtls_bootstrap}",
                        "security.protocol=SSL",
                        "ssl.keystore.type=PKCS12",
                        f"ssl.keystore.location={escape_value(str(keystores[user]))}",
                        f"ssl.keystore.password={secrets.keystores[user]}",
                    ]
                else:
                    module = (
                        "org.apache.kafka.common.security.plain.PlainLoginModule"
                        if login is Login.PLAIN
                        else "org.apache.kafka.common.security.scram.ScramLoginModule"
                    )
                    lines += [
                        f"bootstrap.servers={sasl_bootstrap}",
                        "security.protocol=SASL_SSL",
                        f"sasl.mechanism={login.mechanism}",
                        f"sasl.jaas.config={module} required"
                        f' username="{user}" password="{secrets.passwords[user]}";',
                    ]
                lines += [
                    "ssl.truststore.type=PEM",
                    f"ssl.truststore.location={escape_value(str(ca_pem))}",
                ]
                write_private(self.path(user, login), "\n".join(lines) + "\n")
        self.folder.chmod(0o700)
