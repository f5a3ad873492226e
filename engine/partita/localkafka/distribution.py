"""The Kafka broker's jars: resolved once from Maven Central into a cache folder.

The pom kept beside this module is the single source of the Kafka version. Resolution copies the
runtime classpath into `<home>/kafka/libs-<version>/`; a marker file written last makes a copy
that was interrupted invisible, so the next run resolves again instead of starting a broken JVM.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from partita.errors import PartitaError

POM = Path(__file__).resolve().parent / "pom.xml"
_COMPLETE_MARKER = ".complete"
_MIN_JAVA = 17


class ToolMissingError(PartitaError):
    """Java or Maven is missing or too old; the message says what to install."""


def kafka_version() -> str:
    """The Kafka version the pom resolves (its `kafka.version` property)."""
    match = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    if match is None:
        raise PartitaError(f"{POM} has no <kafka.version> property")
    return match.group(1).strip()


def java_major_version(java: str = "java") -> int:
    """The major version of `java` on PATH; raises ToolMissingError when absent."""
    path = shutil.which(java)
    if path is None:
        raise ToolMissingError(
            "Java is not installed (no `java` on PATH). The local Kafka broker needs Java 17 or"
            " newer: install a JDK or JRE 17+ (e.g. `apt-get install openjdk-17-jre-headless`),"
            " or point KAFKA_BOOTSTRAP_SERVERS at an existing cluster."
        )
    out = subprocess.run([path, "-version"], capture_output=True, text=True, check=False)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if match is None:
        raise ToolMissingError(f"could not read the Java version from `{path} -version`")
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0" style
        major = int(match.group(2))
    return major


def require_java() -> None:
    """Raise ToolMissingError unless Java 17+ is on PATH."""
    major = java_major_version()
    if major < _MIN_JAVA:
        raise ToolMissingError(
            f"Java {major} found, but Kafka 4 brokers need Java {_MIN_JAVA} or newer: install a"
            " newer JDK/JRE and put it first on PATH."
        )


class KafkaDistribution:
    """The cached classpath of one Kafka version under `<home>/kafka/`."""

    def __init__(self, home: Path, version: str | None = None) -> None:
        self.version = version or kafka_version()
        self.libs = home / "kafka" / f"libs-{self.version}"

    @property
    def is_cached(self) -> bool:
        return (self.libs / _COMPLETE_MARKER).is_file()

    @property
    def classpath(self) -> str:
        return str(self.libs / "*")

    def ensure(self, progress: Callable[[str], None] = lambda _msg: None) -> float:
        """Make the jars available; returns the seconds spent resolving (0 when cached).

        Never leaves a partial folder that a later call would trust.
        """
        if self.is_cached:
            return 0.0
        mvn = shutil.which("mvn")
        if mvn is None:
            raise ToolMissingError(
                "Maven is not installed (no `mvn` on PATH). It is needed once, to fetch the Kafka"
                f" {self.version} jars from Maven Central: install Maven 3.6+ (e.g."
                " `apt-get install maven`), or point KAFKA_BOOTSTRAP_SERVERS at an existing"
                " cluster."
            )
        progress(
            f"Resolving Apache Kafka {self.version} from Maven Central into {self.libs}"
            " (first run only)..."
        )
        started = time.monotonic()
        staging = self.libs.with_name(self.libs.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.parent.mkdir(parents=True, exist_ok=True)
        cmd = [
            mvn,
            "-B",
            "-q",
            "-f",
            str(POM),
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={staging}",
        ]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if result.returncode != 0 or not any(staging.glob("kafka_2.13-*.jar")):
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-20:])
            raise PartitaError(
                f"Maven could not resolve Kafka {self.version} (exit {result.returncode})."
                f" Check network access to Maven Central or your ~/.m2/settings.xml mirror.\n"
                f"{tail}"
            )
        shutil.rmtree(self.libs, ignore_errors=True)
        staging.rename(self.libs)
        (self.libs / _COMPLETE_MARKER).write_text(self.version + "\n")
        elapsed = time.monotonic() - started
        jars = len(list(self.libs.glob("*.jar")))
        progress(f"Resolved {jars} jars in {elapsed:.1f} s.")
        return elapsed
