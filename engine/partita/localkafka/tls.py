"""A private certificate authority for the secured local broker, made with the JDK's `keytool`.

Everything is PKCS12 or PEM, the two formats both the broker (Java) and librdkafka read:

- `<name>.p12` of the CA holds its key; `<name>.pem` is its certificate for truststores.
- `issue()` makes a PKCS12 keystore with one key and its chain (the certificate signed by the
  CA, then the CA), for the broker or for a client's mutual TLS.

Store passwords reach keytool through its environment (`-storepass:env`), never its command
line, which other users of the machine can read. Files are written with mode 0600.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from partita.errors import PartitaError

_VALIDITY_DAYS = "825"
_CA_VALIDITY_DAYS = "3650"
_FAST_JVM = ("-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC", "-J-Xshare:auto")
"""keytool runs for a fraction of a second: a JVM tuned for start-up, not throughput."""


class CertificateError(PartitaError):
    """keytool is missing or failed; the message has its output."""


def _keytool() -> str:
    path = shutil.which("keytool")
    if path is None:
        raise CertificateError(
            "the JDK's keytool is not on PATH; the secured local broker makes its certificates"
            " with it: install a JDK 17+ (e.g. `apt-get install openjdk-17-jdk-headless`)"
        )
    return path


def _run(args: Sequence[str], passwords: dict[str, str], stdin: bytes | None = None) -> bytes:
    env = {**os.environ, **passwords}
    result = subprocess.run(
        [_keytool(), *_FAST_JVM, *args], input=stdin, env=env, capture_output=True, check=False
    )
    if result.returncode != 0:
        output = (result.stdout + result.stderr).decode(errors="replace").strip()
        raise CertificateError(f"keytool {args[0]} failed (exit {result.returncode}): {output}")
    return result.stdout


def _private(path: Path) -> None:
    if path.exists():
        path.chmod(0o600)


class CertificateAuthority:
    """A CA whose key lives in `<folder>/<name>.p12` and whose certificate in `<name>.pem`."""

    def __init__(self, folder: Path, name: str, password: str) -> None:
        self.keystore = folder / f"{name}.p12"
        self.pem = folder / f"{name}.pem"
        self._password = password

    @property
    def exists(self) -> bool:
        return self.keystore.is_file() and self.pem.is_file()

    def create(self, common_name: str) -> None:
        """A new self-signed CA (RSA 2048, ten years), replacing any previous one."""
        self.keystore.parent.mkdir(parents=True, exist_ok=True)
        self.keystore.unlink(missing_ok=True)
        secret = {"PARTITA_CA_PASS": self._password}
        _run(
            [
                "-genkeypair",
                "-alias",
                "ca",
                "-keyalg",
                "RSA",
                "-keysize",
                "2048",
                "-dname",
                f"CN={common_name}",
                "-ext",
                "bc:c",
                "-ext",
                "ku:c=keyCertSign,cRLSign",
                "-validity",
                _CA_VALIDITY_DAYS,
                "-storetype",
                "PKCS12",
                "-keystore",
                str(self.keystore),
                "-storepass:env",
                "PARTITA_CA_PASS",
            ],
            secret,
        )
        pem = _run(
            [
                "-exportcert",
                "-rfc",
                "-alias",
                "ca",
                "-keystore",
                str(self.keystore),
                "-storepass:env",
                "PARTITA_CA_PASS",
            ],
            secret,
        )
        self.pem.write_bytes(pem)
        _private(self.keystore)

    def issue(
        self,
        common_name: str,
        keystore: Path,
        password: str,
        *,
        hosts: Sequence[str] = (),
    ) -> None:
        """A PKCS12 keystore at `keystore` with a new key for `CN=<common_name>` and its chain.

        `hosts` (names and IP addresses) go into the subject alternative names: a server
        certificate needs them for hostname verification; a client certificate has none."""
        keystore.unlink(missing_ok=True)
        secrets = {"PARTITA_CA_PASS": self._password, "PARTITA_STORE_PASS": password}
        store = ["-keystore", str(keystore), "-storepass:env", "PARTITA_STORE_PASS"]
        _run(
            [
                "-genkeypair",
                "-alias",
                common_name,
                "-keyalg",
                "RSA",
                "-keysize",
                "2048",
                "-dname",
                f"CN={common_name}",
                "-validity",
                _VALIDITY_DAYS,
                "-storetype",
                "PKCS12",
                *store,
            ],
            secrets,
        )
        request = _run(["-certreq", "-alias", common_name, *store], secrets)
        extensions = ["-ext", "ku:c=digitalSignature,keyEncipherment"]
        if hosts:
            names = ",".join(f"ip:{h}" if _is_ip(h) else f"dns:{h}" for h in hosts)
            extensions += ["-ext", f"san={names}", "-ext", "eku=serverAuth,clientAuth"]
        else:
            extensions += ["-ext", "eku=clientAuth"]
        certificate = _run(
            [
                "-gencert",
                "-rfc",
                "-alias",
                "ca",
                "-keystore",
                str(self.keystore),
                "-storepass:env",
                "PARTITA_CA_PASS",
                "-validity",
                _VALIDITY_DAYS,
                *extensions,
            ],
            secrets,
            stdin=request,
        )
        # The reply carries the CA too, so keytool can install the chain without a prompt.
        _run(
            ["-importcert", "-noprompt", "-alias", common_name, *store],
            secrets,
            stdin=certificate + self.pem.read_bytes(),
        )
        _private(keystore)


def _is_ip(host: str) -> bool:
    return host.replace(".", "").isdigit() or ":" in host
