"""How a Kafka client of one role reaches the cluster: address, TLS, SASL and tuning.

The settings come from Kafka client properties files in Kafka's own format (`PARTITA_KAFKA_CONFIG`
and `PARTITA_KAFKA_CONFIG_<ROLE>`), so the file a Java application or Kafka's tools use works
unchanged. The Java-only keys are translated to librdkafka's:

- `sasl.jaas.config` with PlainLoginModule/ScramLoginModule `username=".." password=".."`:
  `sasl.username`, `sasl.password`; with OAuthBearerLoginModule `clientId`, `clientSecret`,
  `scope`: `sasl.oauthbearer.client.id`, `.client.secret`, `.scope` and `method=oidc`.
- `ssl.truststore.location` (type PEM): `ssl.ca.location`; `ssl.truststore.certificates`:
  `ssl.ca.pem`. librdkafka reads no JKS truststore.
- `ssl.keystore.location` (type PKCS12): `ssl.keystore.location` and `ssl.keystore.password`;
  (type PEM, key and chain in one file): `ssl.certificate.location` and `ssl.key.location`;
  `ssl.keystore.certificate.chain` and `ssl.keystore.key`: `ssl.certificate.pem`, `ssl.key.pem`.
- `ssl.endpoint.identification.algorithm=` (empty, Java's "off"): `none`.

librdkafka's own keys (`sasl.username`, `ssl.ca.location`, `sasl.oauthbearer.*`, ...) are taken
as they are. Keys that decide Partita's guarantees (`group.id`, `transactional.id`,
`isolation.level`, ...) are chosen per client and refused in a file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from partita.config import Config, KafkaRole
from partita.errors import ConfigError
from partita.log.properties import read_properties

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")

RESERVED = frozenset(
    {
        "group.id",
        "group.instance.id",
        "transactional.id",
        "isolation.level",
        "enable.auto.commit",
        "enable.auto.offset.store",
        "auto.offset.reset",
        "enable.partition.eof",
        "partition.assignment.strategy",
        "transaction.timeout.ms",
    }
)
"""Chosen by Partita for each client: exactly-once and replay depend on them."""

_JAVA_ONLY = frozenset(
    {
        "key.serializer",
        "value.serializer",
        "key.deserializer",
        "value.deserializer",
        "ssl.truststore.type",
        "ssl.keystore.type",
        "ssl.truststore.password",
        "ssl.keystore.password",
        "ssl.protocol",
        "ssl.enabled.protocols",
        "ssl.trustmanager.algorithm",
        "ssl.keymanager.algorithm",
        "sasl.login.callback.handler.class",
        "sasl.client.callback.handler.class",
        "client.dns.lookup",
        "schema.registry.url",
        "basic.auth.credentials.source",
        "basic.auth.user.info",
    }
)
"""Java-only keys with no librdkafka meaning (the ones above that matter are translated)."""

_JAAS_RE = re.compile(
    r"^\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\s*(.*?);?\s*$", re.S
)
_JAAS_OPTION_RE = re.compile(r'([\w.]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|(\S+?))(?=\s|;|$)')


@dataclass(frozen=True, slots=True)
class KafkaAccess:
    """Address and librdkafka settings of one role's clients, with the files they came from.

    `settings` never contain a RESERVED key or `bootstrap.servers`; clients built from an
    access get `bootstrap` and `settings` on top of their own defaults."""

    bootstrap: str
    role: KafkaRole
    settings: tuple[tuple[str, str], ...] = ()
    sources: tuple[Path, ...] = ()

    def __repr__(self) -> str:
        shown = {k: ("***" if _secret(k) else v) for k, v in self.settings}
        return f"KafkaAccess({self.describe()}, role={self.role}, settings={shown})"

    @property
    def librdkafka(self) -> dict[str, str]:
        return dict(self.settings)

    @property
    def protocol(self) -> str:
        return self.librdkafka.get("security.protocol", "PLAINTEXT").upper()

    @property
    def mechanism(self) -> str | None:
        settings = self.librdkafka
        if not self.protocol.startswith("SASL"):
            return None
        return (
            settings.get("sasl.mechanism") or settings.get("sasl.mechanisms") or "GSSAPI"
        ).upper()

    @property
    def username(self) -> str | None:
        return self.librdkafka.get("sasl.username")

    @property
    def where(self) -> str:
        """The files the settings came from, for messages ("no properties file" if none)."""
        if not self.sources:
            return "no Kafka properties file (PARTITA_KAFKA_CONFIG is not set)"
        return " + ".join(str(path) for path in self.sources)

    def describe(self) -> str:
        """E.g. `SASL_SSL SCRAM-SHA-512 as 'engine' at host:9094`."""
        parts = [self.protocol]
        if self.mechanism:
            parts.append(self.mechanism)
        if self.username:
            parts.append(f"as {self.username!r}")
        return " ".join(parts) + f" at {self.bootstrap}"


def _secret(key: str) -> bool:
    return key.endswith((".password", ".secret", ".pem", "jaas.config")) or "secret" in key


def kafka_access(config: Config, role: KafkaRole) -> KafkaAccess:
    """The access of `role`: PARTITA_KAFKA_CONFIG, then PARTITA_KAFKA_CONFIG_<ROLE> over it.
    ConfigError naming the file and key when a setting is unreadable or not allowed."""
    merged: dict[str, str] = {}
    sources: list[Path] = []
    for path, variable in (
        (config.kafka_config, "PARTITA_KAFKA_CONFIG"),
        (config.role_config(role), role.variable),
    ):
        if path is None:
            continue
        properties = read_properties(path, variable)
        address = properties.pop("bootstrap.servers", None)
        if (
            address is not None
            and variable != "PARTITA_KAFKA_CONFIG"
            and _hosts(address) != _hosts(config.bootstrap)
        ):
            raise ConfigError(
                f"{variable} ({path}) names bootstrap.servers={address}, but the cluster is"
                f" {config.bootstrap}: a role's file may only change credentials, not the"
                " cluster; remove bootstrap.servers from it or make it match"
            )
        merged.update(librdkafka_settings(properties, f"{variable} ({path})"))
        sources.append(path)
    return KafkaAccess(
        bootstrap=config.bootstrap,
        role=role,
        settings=tuple(sorted(merged.items())),
        sources=tuple(sources),
    )


def _hosts(bootstrap: str) -> frozenset[str]:
    return frozenset(part.strip() for part in bootstrap.split(",") if part.strip())


def librdkafka_settings(properties: Mapping[str, str], where: str) -> dict[str, str]:
    """Java client properties translated to librdkafka's (see the module docs)."""
    java = dict(properties)
    out: dict[str, str] = {}
    for key in sorted(java):
        if key in RESERVED:
            raise ConfigError(
                f"{where}: {key} is chosen by Partita for each of its clients (exactly-once and"
                " replay depend on it); remove it from the file"
            )
    protocol = java.pop("security.protocol", None)
    if protocol is not None:
        if protocol.upper() not in PROTOCOLS:
            raise ConfigError(
                f"{where}: security.protocol={protocol!r}; use one of {', '.join(PROTOCOLS)}"
            )
        out["security.protocol"] = protocol.upper()
    mechanism = java.pop("sasl.mechanism", None) or java.pop("sasl.mechanisms", None)
    if mechanism is not None:
        if mechanism.upper() not in MECHANISMS:
            raise ConfigError(
                f"{where}: sasl.mechanism={mechanism!r}; use one of {', '.join(MECHANISMS)}"
            )
        out["sasl.mechanism"] = mechanism.upper()
    jaas = java.pop("sasl.jaas.config", None)
    if jaas is not None:
        out.update(_jaas(jaas, out.get("sasl.mechanism"), where))
    out.update(_truststore(java, where))
    out.update(_keystore(java, where))
    algorithm = java.pop("ssl.endpoint.identification.algorithm", None)
    if algorithm is not None:
        out["ssl.endpoint.identification.algorithm"] = algorithm.strip().lower() or "none"
    for key, value in java.items():
        if key not in _JAVA_ONLY:
            out[key] = value
    _check(out, where)
    return out


def _jaas(text: str, mechanism: str | None, where: str) -> dict[str, str]:
    match = _JAAS_RE.match(text)
    if match is None:
        raise ConfigError(
            f"{where}: sasl.jaas.config is not of the form"
            ' `<LoginModule class> required key="value" ...;`'
        )
    module = match.group(1).rsplit(".", 1)[-1]
    options = {
        key: (quoted.replace('\\"', '"') if quoted is not None else bare)
        for key, quoted, bare in _JAAS_OPTION_RE.findall(match.group(3))
    }
    if module in ("PlainLoginModule", "ScramLoginModule"):
        missing = [name for name in ("username", "password") if name not in options]
        if missing:
            raise ConfigError(f"{where}: sasl.jaas.config ({module}) lacks {' and '.join(missing)}")
        return {"sasl.username": options["username"], "sasl.password": options["password"]}
    if module == "OAuthBearerLoginModule":
        settings: dict[str, str] = {}
        for option, key in (
            ("clientId", "sasl.oauthbearer.client.id"),
            ("clientSecret", "sasl.oauthbearer.client.secret"),
            ("scope", "sasl.oauthbearer.scope"),
        ):
            if option in options:
                settings[key] = options[option]
        if settings:
            settings["sasl.oauthbearer.method"] = "oidc"
        claims = {k: v for k, v in options.items() if k.startswith("unsecuredLoginStringClaim_")}
        if claims:  # Kafka's unsecured tokens, for development brokers only
            settings["enable.sasl.oauthbearer.unsecure.jwt"] = "true"
            settings["sasl.oauthbearer.config"] = " ".join(
                f"{k.removeprefix('unsecuredLoginStringClaim_')}={v}" for k, v in claims.items()
            )
        return settings
    raise ConfigError(
        f"{where}: sasl.jaas.config uses {match.group(1)}; Partita's clients (librdkafka)"
        " understand PlainLoginModule, ScramLoginModule and OAuthBearerLoginModule (for"
        " Kerberos, set sasl.mechanism=GSSAPI and librdkafka's sasl.kerberos.* keys)"
        + (f" for sasl.mechanism={mechanism}" if mechanism else "")
    )


def _store_type(java: Mapping[str, str], key: str, location: str | None) -> str:
    """The declared store type, else a guess from the file name (Java's default is JKS)."""
    declared = java.get(f"{key}.type")
    if declared:
        return declared.upper()
    suffix = Path(location or "").suffix.lower()
    return {".pem": "PEM", ".crt": "PEM", ".p12": "PKCS12", ".pfx": "PKCS12"}.get(suffix, "JKS")


def _truststore(java: dict[str, str], where: str) -> dict[str, str]:
    location = java.pop("ssl.truststore.location", None)
    kind = _store_type(java, "ssl.truststore", location)
    inline = java.pop("ssl.truststore.certificates", None)
    out: dict[str, str] = {}
    if location is not None:
        if kind != "PEM":
            raise ConfigError(
                f"{where}: ssl.truststore.location is a {kind} truststore, which librdkafka"
                " cannot read; export the CA as PEM (`keytool -exportcert -rfc -alias ca"
                " -keystore FILE -file ca.pem`) and set ssl.truststore.type=PEM and"
                " ssl.truststore.location=ca.pem"
            )
        out["ssl.ca.location"] = location
    if inline is not None:
        out["ssl.ca.pem"] = inline
    return out


def _keystore(java: dict[str, str], where: str) -> dict[str, str]:
    location = java.pop("ssl.keystore.location", None)
    kind = _store_type(java, "ssl.keystore", location)
    password = java.get("ssl.keystore.password")
    out: dict[str, str] = {}
    if location is not None:
        if kind == "PKCS12":
            out["ssl.keystore.location"] = location
            if password is not None:
                out["ssl.keystore.password"] = password
        elif kind == "PEM":
            out["ssl.certificate.location"] = location
            out["ssl.key.location"] = location
        else:
            raise ConfigError(
                f"{where}: ssl.keystore.location is a {kind} keystore, which librdkafka cannot"
                " read; convert it (`keytool -importkeystore -srckeystore FILE"
                " -destkeystore client.p12 -deststoretype PKCS12`) and set"
                " ssl.keystore.type=PKCS12"
            )
    chain = java.pop("ssl.keystore.certificate.chain", None)
    key = java.pop("ssl.keystore.key", None)
    if chain is not None:
        out["ssl.certificate.pem"] = chain
    if key is not None:
        out["ssl.key.pem"] = key
    return out


def _check(settings: Mapping[str, str], where: str) -> None:
    protocol = settings.get("security.protocol", "PLAINTEXT")
    mechanism = settings.get("sasl.mechanism")
    has_user = "sasl.username" in settings and "sasl.password" in settings
    if protocol.startswith("SASL") and mechanism in MECHANISMS[:3] and not has_user:
        raise ConfigError(
            f"{where}: security.protocol={protocol} with sasl.mechanism={mechanism} needs a"
            ' user: set sasl.jaas.config=... required username="NAME" password="SECRET";'
            " (or librdkafka's sasl.username and sasl.password)"
        )
    if mechanism is not None and not protocol.startswith("SASL"):
        raise ConfigError(
            f"{where}: sasl.mechanism={mechanism} is set but security.protocol={protocol} does"
            " not use SASL; set security.protocol=SASL_SSL (or SASL_PLAINTEXT)"
        )
