"""The secured local broker of `partita kafka up --secure`: TLS, SASL and ACLs enforced.

A second single-node KRaft broker with its own folder, `<home>/kafka-secure/`, so it runs next
to the plaintext one (same cached jars). Listeners, all on 127.0.0.1:

- `SASL_SSL` (default port 9094): SASL/PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 over TLS. SCRAM
  users are written into the metadata when the storage is formatted (`--add-scram`); PLAIN
  users are the listener's static JAAS entries. Both hold the same password per user.
- `MTLS` (SSL, default 9095): TLS with `ssl.client.auth=required`; the certificate's CN is the
  principal (`CN=engine` is `User:engine`).
- `CONTROLLER` (SSL, default 9096): KRaft controller traffic, also with client certificates
  required.

Authorization is KRaft's `StandardAuthorizer` with `allow.everyone.if.no.acl.found=false`, so a
principal without ACLs may do nothing but read cluster metadata. Super users are `User:admin`
and `User:broker`. The second exists because the broker talks to itself: its inter-broker
listener (transaction markers, which need ClusterAction) is `MTLS` and its connections to its
own controller (registration, heartbeats, forwarded requests) go over `CONTROLLER`, both
authenticated with the broker's own certificate (`CN=broker`). Only the broker's keystore,
mode 0600 in the folder, holds that key; no anonymous or PLAINTEXT connection exists on any
port, so reaching the controller port gives a client nothing without that key.

Files: `server.properties` (0600, it holds the PLAIN passwords), `secrets.json` (0600: every
user's and keystore's password), `tls/` (`ca.pem` for clients' truststores, `untrusted-ca.pem`
for tests, `<user>.p12` client keystores, `broker.p12`), `clients/<user>[.<login>].properties`
(see `partita.localkafka.credentials`), `data/`, `broker.log`. The CA, certificates and passwords
are made on the first start and kept, like the data; `down --wipe` deletes all of them.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from partita.config import KafkaRole
from partita.localkafka.broker import BrokerError, LocalBroker, _RunState
from partita.localkafka.credentials import (
    ADMIN,
    BROKER,
    USERS,
    ClientFiles,
    Login,
    Secrets,
    escape_value,
)
from partita.localkafka.distribution import KafkaDistribution
from partita.localkafka.tls import CertificateAuthority
from partita.log.properties import read_properties
from partita.log.security import KafkaAccess, librdkafka_settings

DEFAULT_SASL_SSL_PORT = 9094
DEFAULT_MTLS_PORT = 9095
DEFAULT_SECURE_CONTROLLER_PORT = 9096
_PRINCIPAL_FROM_CN = "RULE:^CN=([^,]+)(,.*)?$/$1/,DEFAULT"


@dataclass(frozen=True, slots=True)
class SecureKafka:
    """Where the secured broker listens and the files that log in to it."""

    home: Path
    """The PARTITA_HOME it runs from (its files are in `<home>/kafka-secure/`)."""
    bootstrap: str
    """The SASL_SSL listener."""
    mtls_bootstrap: str
    """The SSL listener that requires a client certificate."""
    controller_bootstrap: str
    ca_pem: Path
    untrusted_ca_pem: Path
    """A CA that signed nothing the broker presents: a truststore of it must be refused."""
    clients: ClientFiles

    def properties(self, user: str, login: Login = Login.SCRAM_SHA_512) -> Path:
        """`user`'s client properties file for `login` (Kafka's Java client format)."""
        return self.clients.path(user, login)

    def role(self, role: KafkaRole, login: Login = Login.SCRAM_SHA_512) -> Path:
        """The properties file of the user that runs `role`'s clients."""
        return self.clients.role(role, login)

    @property
    def admin(self) -> Path:
        """The super user's SCRAM-SHA-512 properties file."""
        return self.clients.admin


class SecureLocalBroker(LocalBroker):
    """Start, stop and inspect the secured local broker of one PARTITA_HOME."""

    folder = "kafka-secure"
    down_command = "partita kafka down --secure"

    def __init__(
        self,
        home: Path,
        port: int = DEFAULT_SASL_SSL_PORT,
        controller_port: int = DEFAULT_SECURE_CONTROLLER_PORT,
        *,
        mtls_port: int = DEFAULT_MTLS_PORT,
        heap: str = "-Xms256m -Xmx512m",
        internal_partitions: int = 3,
        distribution: KafkaDistribution | None = None,
    ) -> None:
        super().__init__(
            home,
            port,
            controller_port,
            heap=heap,
            internal_partitions=internal_partitions,
            distribution=distribution,
        )
        if len({port, controller_port, mtls_port}) != 3:
            raise BrokerError(
                f"the secured broker needs three different ports, got SASL_SSL {port},"
                f" mTLS {mtls_port} and controller {controller_port}"
            )
        self.mtls_port = mtls_port
        self.tls_dir = self.dir / "tls"
        self.secrets_file = self.dir / "secrets.json"
        self.clients = ClientFiles(self.dir / "clients")
        self._prepared: Secrets | None = None

    @property
    def mtls_bootstrap(self) -> str:
        return f"127.0.0.1:{self.mtls_port}"

    @property
    def ca_pem(self) -> Path:
        """The CA certificate clients trust (`ssl.truststore.location`, type PEM)."""
        return self.tls_dir / "ca.pem"

    @property
    def untrusted_ca_pem(self) -> Path:
        """Another CA's certificate, which signed nothing the broker presents (for tests)."""
        return self.tls_dir / "untrusted-ca.pem"

    def keystore(self, user: str) -> Path:
        """The PKCS12 keystore with `user`'s client certificate (CN=<user>)."""
        return self.tls_dir / f"{user}.p12"

    def endpoints(self) -> SecureKafka:
        return SecureKafka(
            home=self.home,
            bootstrap=self.bootstrap,
            mtls_bootstrap=self.mtls_bootstrap,
            controller_bootstrap=f"127.0.0.1:{self.controller_port}",
            ca_pem=self.ca_pem,
            untrusted_ca_pem=self.untrusted_ca_pem,
            clients=self.clients,
        )

    # -- what this broker is ------------------------------------------------------------------

    def _ports(self) -> dict[str, int]:
        return {
            "--port (SASL_SSL)": self.port,
            "--mtls-port": self.mtls_port,
            "--controller-port": self.controller_port,
        }

    def _run_state(self, pid: int) -> _RunState:
        return _RunState(
            pid, self.port, self.controller_port, self.distribution.version, self.mtls_port
        )

    def _probe(self, bootstrap: str) -> KafkaAccess:
        """The admin's SCRAM-SHA-512 login, read from its client properties file."""
        path = self.clients.admin
        properties = read_properties(path, "the secured broker's admin properties")
        properties.pop("bootstrap.servers", None)
        return KafkaAccess(
            bootstrap=bootstrap,
            role=KafkaRole.OPERATOR,
            settings=tuple(sorted(librdkafka_settings(properties, str(path)).items())),
            sources=(path,),
        )

    def _prepare(self, progress: Callable[[str], None]) -> None:
        """Passwords, CA and certificates (first start only), then the client files."""
        secrets = Secrets.load(self.secrets_file)
        if secrets is None:
            if (self.data_dir / "meta.properties").is_file():
                raise BrokerError(
                    f"{self.data_dir} was formatted with users whose passwords are gone"
                    f" ({self.secrets_file} is missing or damaged); run `partita kafka down"
                    " --secure --wipe` to start afresh"
                )
            secrets = Secrets.new()
            secrets.save(self.secrets_file)
        self._prepared = secrets
        if not self._certificates_exist():
            progress(f"Making a CA and certificates with keytool in {self.tls_dir}...")
            self._make_certificates(secrets)
        self.clients.write(
            sasl_bootstrap=self.bootstrap,
            mtls_bootstrap=self.mtls_bootstrap,
            ca_pem=self.ca_pem,
            keystores={user: self.keystore(user) for user in USERS},
            secrets=secrets,
        )

    def _certificates_exist(self) -> bool:
        needed = [self.ca_pem, self.untrusted_ca_pem, self.keystore(BROKER)]
        needed += [self.keystore(user) for user in USERS]
        return all(path.is_file() for path in needed)

    def _make_certificates(self, secrets: Secrets) -> None:
        self.tls_dir.mkdir(parents=True, exist_ok=True)
        self.tls_dir.chmod(0o700)
        ca = CertificateAuthority(self.tls_dir, "ca", secrets.keystores["ca"])
        untrusted = CertificateAuthority(
            self.tls_dir, "untrusted-ca", secrets.keystores["untrusted-ca"]
        )
        ca.create("Partita local CA")
        # keytool is one JVM per step: two at a time roughly halves the wait on a laptop.
        with ThreadPoolExecutor(max_workers=2) as pool:
            jobs = [pool.submit(untrusted.create, "Partita untrusted CA")]
            jobs.append(
                pool.submit(
                    ca.issue,
                    BROKER,
                    self.keystore(BROKER),
                    secrets.keystores[BROKER],
                    hosts=("localhost", "127.0.0.1"),
                )
            )
            jobs += [
                pool.submit(ca.issue, user, self.keystore(user), secrets.keystores[user])
                for user in USERS
            ]
            for job in jobs:
                job.result()

    def _secrets(self) -> Secrets:
        if self._prepared is None:
            raise BrokerError("the secured broker's secrets were not prepared")
        return self._prepared

    def _listeners(self) -> str:
        secrets = self._secrets()
        plain_users = " ".join(f'user_{user}="{secrets.passwords[user]}"' for user in USERS)
        mechanisms = ",".join(login.mechanism for login in Login if login is not Login.MTLS)
        scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        return f"""\
listeners=SASL_SSL://127.0.0.1:{self.port},MTLS://127.0.0.1:{self.mtls_port},\
CONTROLLER://127.0.0.1:{self.controller_port}
advertised.listeners=SASL_SSL://127.0.0.1:{self.port},MTLS://127.0.0.1:{self.mtls_port}
listener.security.protocol.map=SASL_SSL:SASL_SSL,MTLS:SSL,CONTROLLER:SSL
controller.listener.names=CONTROLLER
inter.broker.listener.name=MTLS
ssl.keystore.type=PKCS12
ssl.keystore.location={escape_value(str(self.keystore(BROKER)))}
ssl.keystore.password={secrets.keystores[BROKER]}
ssl.truststore.type=PEM
ssl.truststore.location={escape_value(str(self.ca_pem))}
listener.name.mtls.ssl.client.auth=required
listener.name.controller.ssl.client.auth=required
ssl.principal.mapping.rules={_PRINCIPAL_FROM_CN}
sasl.enabled.mechanisms={mechanisms}
listener.name.sasl_ssl.sasl.enabled.mechanisms={mechanisms}
listener.name.sasl_ssl.plain.sasl.jaas.config=\
org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config={scram}
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config={scram}
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
super.users=User:{ADMIN};User:{BROKER}
"""

    def _format_args(self) -> list[str]:
        secrets = self._secrets()
        args: list[str] = []
        for user in USERS:
            for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                password = secrets.passwords[user]
                args += ["--add-scram", f"{mechanism}=[name={user},password={password}]"]
        return args

    # -- stop ---------------------------------------------------------------------------------

    def down(self, *, wipe: bool = False) -> bool:
        """Stop the broker; with `wipe` also delete its data, users, CA and client files."""
        was_running = super().down(wipe=wipe)
        if wipe:
            for folder in (self.tls_dir, self.clients.folder):
                shutil.rmtree(folder, ignore_errors=True)
            self.secrets_file.unlink(missing_ok=True)
            (self.dir / "server.properties").unlink(missing_ok=True)  # it holds passwords
        return was_running


def describe(secure: SecureKafka) -> str:
    """What `partita kafka up --secure` prints: where to connect and which file to use."""
    roles = "\n".join(f"    {role.value:10} {secure.role(role)}" for role in KafkaRole)
    example = secure.properties(ADMIN, Login.MTLS).name
    return f"""\
SASL_SSL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512): {secure.bootstrap}
SSL with client certificates (mTLS):           {secure.mtls_bootstrap}
CA certificate (PEM, for ssl.truststore.location): {secure.ca_pem}
Client properties (Kafka's client format, SCRAM-SHA-512, mode 0600):
    admin      {secure.admin}   (super user)
{roles}
  Other logins per user: <user>.plain.properties, <user>.scram-sha-256.properties,
  <user>.mtls.properties (e.g. {example}).
Use them:
  PARTITA_KAFKA_CONFIG={secure.admin} partita topics apply
  PARTITA_KAFKA_CONFIG={secure.admin} \\
    PARTITA_KAFKA_CONFIG_ENGINE={secure.role(KafkaRole.ENGINE)} partita worker
  Role users have no ACLs yet: Kafka refuses them until their role's ACLs are created
  (`partita acls --role ROLE --principal User:ROLE --apply`, as admin)."""
