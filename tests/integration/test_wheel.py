"""The wheel, installed as a user installs it: built from a clean copy of the tree, installed with
its dependencies into a fresh venv outside the checkout, then, with that install only, topics
applied, a process deployed, an instance created, its job completed and its result awaited on
the real broker. Also: the wheel carries every file the engine reads at run time."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.kafka

ONE_TASK = ROOT / "tests" / "fixtures" / "bpmn" / "one-task.bpmn"
# What the build reads: pyproject.toml names README.md as the readme; engine/partita/_contract links
# into avro/ and topics/.
BUILD_INPUTS = ("pyproject.toml", "README.md", "engine", "avro", "topics")
CONTRACT = ("avro", "topics")
COMPLETED = re.compile(r"^instance (\d+) completed: (\{.*\})$", re.MULTILINE)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `pip wheel` builds from a copy of the build inputs: an in-tree build would
    write build/ into the checkout and ship whatever stale modules an earlier build left there."""
    scratch = tmp_path_factory.mktemp("wheel-build")
    source = scratch / "source"
    source.mkdir()
    junk = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in BUILD_INPUTS:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, symlinks=True, ignore=junk)
        else:
            shutil.copy2(ROOT / name, source / name)
    out = scratch / "dist"
    _run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-w", str(out)], scratch)
    (built,) = out.glob("partita-*.whl")
    return built


@dataclass(frozen=True, slots=True)
class Install:
    """A venv that holds the wheel and its dependencies and nothing of the checkout."""

    venv: Path
    cwd: Path
    env: dict[str, str]

    def partita(self, *args: str, timeout: float = 90) -> str:
        """Run the venv's `partita`; its stdout, after asserting it exited 0."""
        return _run([str(self.venv / "bin" / "partita"), *args], self.cwd, self.env, timeout)


@pytest.fixture(scope="module")
def install(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Install:
    place = tmp_path_factory.mktemp("wheel-install")
    venv = place / "venv"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PARTITA_", "PYTHON", "KAFKA_"))
        and k not in ("VIRTUAL_ENV", "CONDA_PREFIX")
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PARTITA_HOME"] = str(place / "home")
    _run([sys.executable, "-m", "venv", str(venv)], place, env)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    _run([*pip, str(wheel)], place, env, timeout=300)
    return Install(venv, place, env)


def test_the_wheel_carries_every_file_the_engine_reads(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        shipped = {name: archive.read(name) for name in archive.namelist()}
    expected: dict[str, bytes] = {}
    for folder in CONTRACT:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file():
                name = f"partita/_contract/{path.relative_to(ROOT).as_posix()}"
                expected[name] = path.read_bytes()
    for directory, subdirs, files in os.walk(ROOT / "engine" / "partita"):
        subdirs[:] = [d for d in subdirs if d != "__pycache__"]
        for file in files:
            path = Path(directory) / file
            if path.suffix not in (".py", ".pyc"):
                expected[path.relative_to(ROOT / "engine").as_posix()] = path.read_bytes()
    assert len(expected) > len(CONTRACT)
    missing = sorted(name for name in expected if name not in shipped)
    assert not missing, f"files the engine reads that the wheel lacks: {missing}"
    changed = sorted(name for name, data in expected.items() if shipped[name] != data)
    assert not changed, f"files that differ from the tree: {changed}"
    outside = sorted(
        n for n in shipped if not n.startswith(("partita/", "partita-")) or "__pycache__" in n
    )
    assert not outside, f"the wheel carries files outside the engine package: {outside}"


# Run by the installed venv's Python: every packaged file, read the way the engine reads it.
LOAD_PACKAGED_FILES = """
from partita.bench.e2e import WORKLOADS
from partita.bpmn.parser import parse_bpmn
from partita.config import Config
from partita.demo import BPMN as DEMO
from partita.localkafka.distribution import kafka_version
from partita.log.topics import load_specs
from partita.ops.chaos import BPMN as CHAOS
from partita.protocol.schemas import current_schema, known_schemas

files = [DEMO, CHAOS, *(w.bpmn for w in WORKLOADS.values())]
for path in files:
    print(path, [p.id for p in parse_bpmn(path.read_bytes(), path.name)])
print(current_schema().path, len(known_schemas()), "schemas")
print(len(load_specs(Config())), "topics")
print("kafka", kafka_version())
"""


def test_the_installed_wheel_reads_its_packaged_files(install: Install) -> None:
    python = str(install.venv / "bin" / "python")
    out = _run([python, "-c", LOAD_PACKAGED_FILES], install.cwd, install.env)
    site = str(install.venv.resolve())
    *read, topics, kafka = out.splitlines()
    assert len(read) > 4 and all(line.startswith(site) for line in read), out
    assert all(re.search(r"\.bpmn \['[\w-]+'", line) for line in read[:-1]), out
    assert re.search(r"/partita/_contract/avro/record\.avsc \d+ schemas$", read[-1]), out
    assert re.match(r"^\d+ topics$", topics) and re.match(r"^kafka \d+\.\d+", kafka), out


def test_deploy_create_and_complete_with_the_installed_wheel_only(
    install: Install, kafka_bootstrap: str, tmp_path: Path
) -> None:
    python = install.venv / "bin" / "python"
    found = _run(
        [str(python), "-c", "import partita; print(partita.__file__)"], install.cwd, install.env
    )
    module = Path(found.strip()).resolve()
    assert module.is_relative_to(install.venv.resolve()), module
    assert not module.is_relative_to(ROOT), module
    native = "from partita.protocol.codec import RecordCodec; print(RecordCodec().native)"
    assert _run([str(python), "-c", native], install.cwd, install.env).strip() == "False"

    cluster = ["--bootstrap-servers", kafka_bootstrap, "--namespace", f"w{uuid.uuid4().hex[:8]}"]
    install.partita("topics", "apply", *cluster)
    bpmn = shutil.copy(ONE_TASK, install.cwd / "one-task.bpmn")
    with _background(install, tmp_path / "partita.log", "worker", *cluster) as engine:
        deployed = install.partita("deploy", str(bpmn), *cluster, "--timeout", "60")
        assert re.match(r"^one-task version 1 key \d+", deployed), deployed
        job_worker = ["jobs", "work", "work", "--count", "1", "--vars", '{"worked": true}']
        with _background(install, tmp_path / "jobs.log", *job_worker, *cluster) as jobs:
            created = install.partita(
                "create", "one-task", "--vars", '{"n": 7}', "--await", *cluster, "--timeout", "60"
            )
            match = COMPLETED.search(created)
            assert match is not None, created
            instance, variables = match.groups()
            assert json.loads(variables) == {"n": 7, "worked": True}
            assert jobs.process.wait(60) == 0, jobs.output()
            assert f"of instance {instance}" in jobs.output()
            assert "1 jobs of type work completed" in jobs.output()
        assert engine.stop() == 0, engine.output()
    assert "records are encoded and decoded by the pure-Python codec" in engine.output()


@dataclass(frozen=True, slots=True)
class _Background:
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, timeout: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)


@contextlib.contextmanager
def _background(install: Install, log: Path, *args: str) -> Iterator[_Background]:
    """The venv's `partita ARGS` in the background, its output in `log`; killed if still
    running when the block ends."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(install.venv / "bin" / "partita"), *args],
            cwd=install.cwd,
            env=install.env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield _Background(process, log)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 120) -> str:
    result = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert result.returncode == 0, f"{cmd} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout
