"""The analytics role's Kafka access (`partita.log.security.KafkaAccess`) as faust settings.

The faust app talks to Kafka through aiokafka, not librdkafka, so the librdkafka settings of
the properties files are translated here into faust's `broker` and `broker_credentials`. faust
0.15's aiokafka driver hands the credentials to every client it makes: the fold consumer, the
transactional producers and the client that creates and reads the tables' changelogs.

What passes through (faust `credentials_to_aiokafka_auth`, aiokafka 0.14 `conn.py`):

- `security.protocol=SASL_SSL` or `SASL_PLAINTEXT` with `sasl.mechanism` PLAIN, SCRAM-SHA-256
  or SCRAM-SHA-512: `faust.SASLCredentials` with the user of `sasl.jaas.config` (or
  `sasl.username`, `sasl.password`); aiokafka runs the SCRAM exchange itself. With SASL_SSL
  the credentials carry the SSL context below.
- `security.protocol=SSL`: `faust.SSLCredentials` with that context (TLS, or mTLS when a client
  certificate is configured).
- `PLAINTEXT`: no credentials.
- OAUTHBEARER and GSSAPI: a ConfigError. faust takes an OAuth token provider only as code and
  GSSAPI needs the `gssapi` package; give the analytics a PLAIN or SCRAM user
  (`PARTITA_KAFKA_CONFIG_ANALYTICS`) instead.

The SSL context (Python's `ssl`, which reads PEM only):

- Trust: `ssl.ca.location` (a PEM file, or a folder of them) and/or `ssl.ca.pem`; with neither
  (or `ssl.ca.location=probe`) the system's CAs, as librdkafka does. `ssl.crl.location` adds a
  revocation list checked for the broker's certificate.
- The broker's certificate is always verified, unless `enable.ssl.certificate.verification=
  false`; its host name is checked unless `ssl.endpoint.identification.algorithm=none` (Java's
  empty value), librdkafka's default being `https`.
- Client certificate (mTLS): `ssl.certificate.location` with `ssl.key.location` (PEM files, the
  same file for both is fine), or `ssl.certificate.pem` with `ssl.key.pem`; `ssl.key.password`
  for an encrypted key. A PKCS12 keystore is refused with the `openssl` command converting it.
- `ssl.cipher.suites`: the context's cipher list (both take OpenSSL's cipher-list syntax).

Any other `ssl.*` or `sasl.*` key is one the analytics cannot honour: a ConfigError names it,
rather than connecting with weaker settings than the file asks for.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from partita.errors import ConfigError
from partita.log.security import KafkaAccess

if TYPE_CHECKING:  # faust is the optional `analytics` extra
    from faust.auth import Credentials

SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
"""The SASL mechanisms the analytics (faust over aiokafka) authenticate with."""

_UNDERSTOOD = frozenset(
    {
        "security.protocol",
        "sasl.mechanism",
        "sasl.mechanisms",
        "sasl.username",
        "sasl.password",
        "ssl.ca.location",
        "ssl.ca.pem",
        "ssl.crl.location",
        "ssl.certificate.location",
        "ssl.certificate.pem",
        "ssl.key.location",
        "ssl.key.pem",
        "ssl.key.password",
        "ssl.cipher.suites",
        "ssl.endpoint.identification.algorithm",
        "enable.ssl.certificate.verification",
        "ssl.keystore.location",
        "ssl.keystore.password",
    }
)


def faust_broker_settings(access: KafkaAccess) -> dict[str, Any]:
    """`broker` and `broker_credentials` for `faust.App`, from the analytics' access.

    ConfigError, naming the setting and the file it came from, for anything faust/aiokafka
    cannot do as the file asks; never silently weaker than the file."""
    return {
        "broker": [f"kafka://{server.strip()}" for server in access.bootstrap.split(",")],
        "broker_credentials": broker_credentials(access),
    }


def broker_credentials(access: KafkaAccess) -> Credentials | None:
    """faust credentials for `access`: SASL (with TLS for SASL_SSL), TLS alone, or None."""
    from faust.auth import SASLCredentials, SSLCredentials

    protocol = access.protocol
    mechanism = access.mechanism
    if mechanism is not None and mechanism not in SASL_MECHANISMS:
        raise ConfigError(
            f"sasl.mechanism={mechanism} ({access.where}): the analytics (faust-streaming over"
            f" aiokafka) authenticate with {', '.join(SASL_MECHANISMS)} only; give them a user"
            f" of one of these in {access.role.variable}. Partita's other clients (librdkafka)"
            f" support {mechanism}."
        )
    settings = access.librdkafka
    _refuse_unknown(settings, access)
    if protocol == "PLAINTEXT":
        return None
    if protocol == "SSL":
        return SSLCredentials(ssl_context(access))
    return SASLCredentials(
        username=settings.get("sasl.username"),
        password=settings.get("sasl.password"),
        mechanism=mechanism,
        ssl_context=ssl_context(access) if protocol == "SASL_SSL" else None,
    )


def ssl_context(access: KafkaAccess) -> ssl.SSLContext:
    """A client SSL context with the trust, verification and client certificate of `access`
    (see the module docs). ConfigError naming the key and file when one cannot be loaded."""
    settings = access.librdkafka
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the certificate and host name
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    _load_trust(context, settings, access)
    verify = settings.get("enable.ssl.certificate.verification", "true").strip().lower()
    algorithm = settings.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
    if algorithm not in ("https", "none", ""):
        raise ConfigError(
            f"ssl.endpoint.identification.algorithm={algorithm} ({access.where}): use https"
            " (check the broker's host name) or none"
        )
    if algorithm in ("none", "") or verify == "false":
        context.check_hostname = False
    if verify == "false":
        context.verify_mode = ssl.CERT_NONE
    ciphers = settings.get("ssl.cipher.suites")
    if ciphers:
        try:
            context.set_ciphers(ciphers)
        except ssl.SSLError:
            raise ConfigError(
                f"ssl.cipher.suites={ciphers!r} ({access.where}) names no cipher OpenSSL knows"
            ) from None
    _load_client_certificate(context, settings, access)
    return context


def _refuse_unknown(settings: Mapping[str, str], access: KafkaAccess) -> None:
    unknown = sorted(
        key for key in settings if key.startswith(("ssl.", "sasl.")) and key not in _UNDERSTOOD
    )
    if unknown:
        raise ConfigError(
            f"{', '.join(unknown)} ({access.where}): the analytics (faust-streaming over"
            " aiokafka) cannot apply this, and will not connect with weaker settings than the"
            " file asks for; remove it"
        )


def _load_trust(context: ssl.SSLContext, settings: Mapping[str, str], access: KafkaAccess) -> None:
    location = settings.get("ssl.ca.location")
    inline = settings.get("ssl.ca.pem")
    if not (location and location != "probe") and not inline:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    try:
        if location and location != "probe":
            if Path(location).is_dir():
                context.load_verify_locations(capath=location)
            else:
                context.load_verify_locations(cafile=location)
        if inline:
            context.load_verify_locations(cadata=inline)
    except (OSError, ssl.SSLError) as error:
        key = "ssl.ca.pem" if inline and not location else "ssl.ca.location (ssl.truststore.*)"
        raise ConfigError(
            f"{key} ({access.where}): cannot load the CA certificates: {_reason(error)};"
            " it must be PEM (-----BEGIN CERTIFICATE-----)"
        ) from None
    crl = settings.get("ssl.crl.location")
    if crl:
        try:
            context.load_verify_locations(cafile=crl)
        except (OSError, ssl.SSLError) as error:
            raise ConfigError(
                f"ssl.crl.location ({access.where}): cannot load {crl}: {_reason(error)}"
            ) from None
        context.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF


def _load_client_certificate(
    context: ssl.SSLContext, settings: Mapping[str, str], access: KafkaAccess
) -> None:
    if "ssl.keystore.location" in settings:
        raise ConfigError(
            f"ssl.keystore.location ({access.where}) is a PKCS12 keystore, which the analytics"
            " (Python's ssl module) cannot read: convert it to PEM with `openssl pkcs12 -in"
            " client.p12 -out client.pem -nodes` and set ssl.keystore.type=PEM and"
            f" ssl.keystore.location=client.pem in {access.role.variable}"
        )
    password = settings.get("ssl.key.password")
    certificate = settings.get("ssl.certificate.location")
    key = settings.get("ssl.key.location")
    certificate_pem = settings.get("ssl.certificate.pem")
    key_pem = settings.get("ssl.key.pem")
    if certificate is None and key is None and certificate_pem is None and key_pem is None:
        return
    try:
        if certificate is not None and key is not None:
            context.load_cert_chain(certificate, key, password)
        elif certificate_pem is not None and key_pem is not None:
            _load_inline_chain(context, certificate_pem, key_pem, password)
        else:
            raise ConfigError(
                f"the client certificate ({access.where}) needs both a certificate and its key:"
                " ssl.certificate.location with ssl.key.location, or ssl.certificate.pem with"
                " ssl.key.pem (Java: ssl.keystore.location of type PEM, or"
                " ssl.keystore.certificate.chain with ssl.keystore.key)"
            )
    except (OSError, ssl.SSLError) as error:
        raise ConfigError(
            f"the client certificate ({access.where}) cannot be loaded: {_reason(error)}; it"
            " must be PEM, the key matching the certificate (ssl.key.password if encrypted)"
        ) from None


def _load_inline_chain(
    context: ssl.SSLContext, certificate: str, key: str, password: str | None
) -> None:
    """Python's ssl loads a certificate chain from files only: the PEM text goes to a file
    only this user can read, in a private folder, removed as soon as it is loaded."""
    with tempfile.TemporaryDirectory(prefix="partita-tls-") as folder:
        path = Path(folder) / "client.pem"
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="ascii") as out:
            out.write(certificate.strip() + "\n" + key.strip() + "\n")
        context.load_cert_chain(path, password=password)


def _reason(error: OSError | ssl.SSLError) -> str:
    if isinstance(error, ssl.SSLError):
        return error.reason or str(error)
    return f"{error.strerror or error} ({error.filename})" if error.filename else str(error)
