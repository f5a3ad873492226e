"""zbctl 8.5.0, Zeebe's command line client (Go, built from the module
github.com/camunda/zeebe/clients/go/v8 unchanged), against `partita gateway` over plaintext gRPC:
`status` reads the topology, `deploy resource` deploys a process by its path and
`create instance` starts it with variables; the test checks what zbctl printed and that the
instance was created on the log.

zbctl is built once with `go install` into .partita/zbctl/v8.5.0/ and reused from there. It is
optional where it cannot be built, but this test does not skip: without `go`, or when the module
cannot be fetched (no module proxy and no module cache), it fails and says what is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from partita.config import Config
from partita.protocol.enums import BpmnElementType
from partita.protocol.intents import ProcessInstanceCreationIntent, ProcessInstanceIntent
from tests.support.gateway import RunningGateway
from tests.support.paths import BPMN_FIXTURES, ROOT
from tests.support.worker_processes import read_log

pytestmark = [pytest.mark.kafka, pytest.mark.interop]

VERSION = "v8.5.0"
MODULE = "github.com/camunda/zeebe/clients/go/v8"
BIN = ROOT / ".partita" / "zbctl" / VERSION
BPMN = BPMN_FIXTURES / "gateway"


def _go_install(zbctl: Path) -> None:
    """`go install` zbctl of VERSION as `zbctl`, via a temporary GOBIN beside it, so a build that
    fails halfway leaves nothing to reuse."""
    go = shutil.which("go")
    if go is None:
        pytest.fail(f"zbctl {VERSION} cannot be built: `go` is not on PATH (Go 1.21+ is needed)")
    zbctl.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=zbctl.parent) as gobin:
        flags = os.environ.get("GOFLAGS", "")
        env = {**os.environ, "GOBIN": gobin, "GOFLAGS": f"{flags} -p=1".strip()}
        done = subprocess.run(
            [go, "install", f"{MODULE}/cmd/zbctl@{VERSION}"],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        if done.returncode != 0:
            proxy = subprocess.run(
                [go, "env", "GOPROXY"], capture_output=True, text=True, check=False
            ).stdout.strip()
            pytest.fail(
                f"zbctl {VERSION} cannot be built: `go install {MODULE}/cmd/zbctl@{VERSION}`"
                f" failed (exit {done.returncode}). It needs the module from the Go module proxy"
                f" (GOPROXY={proxy}) or the module cache.\n{done.stdout}{done.stderr}"
            )
        os.replace(Path(gobin) / "zbctl", zbctl)


@pytest.fixture(scope="session")
def zbctl() -> Path:
    """zbctl of VERSION, built once into BIN; with `go` at hand, its build info must name the
    module at VERSION (`zbctl version` says only "development" for a `go install` build)."""
    zbctl = BIN / "zbctl"
    if not zbctl.is_file():
        _go_install(zbctl)
    go = shutil.which("go")
    if go is not None:
        info = subprocess.run(
            [go, "version", "-m", str(zbctl)], capture_output=True, text=True, check=False
        )
        assert f"\tmod\t{MODULE}\t{VERSION}\t" in info.stdout, info.stdout + info.stderr
    return zbctl


def run(zbctl: Path, gateway: RunningGateway, *args: str) -> str:
    """zbctl's output of a command that must succeed; no ZEEBE_* variable of the caller's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZEEBE_", "CAMUNDA_"))}
    done = subprocess.run(
        [str(zbctl), *args, "--insecure", "--address", gateway.grpc],
        env={**env, "HOME": str(gateway.log.parent)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    output = f"zbctl {' '.join(args)}:\n{done.stdout}{done.stderr}"
    assert done.returncode == 0, f"{output}\ngateway:\n{gateway.log.read_text()}"
    return done.stdout


@pytest.mark.timeout(1200)
def test_zbctl_status_deploy_create(zbctl: Path, engine: Config, gateway: RunningGateway) -> None:
    status = run(zbctl, gateway, "status").splitlines()
    assert "Gateway version: 8.8.0" in status
    assert f"Partitions count: {engine.partitions}" in status
    for partition in range(1, engine.partitions + 1):
        assert f"    Partition {partition} : Leader, Healthy" in status, status

    deployed = json.loads(run(zbctl, gateway, "deploy", "resource", str(BPMN / "double.bpmn")))
    [deployment] = deployed["deployments"]
    process = deployment["process"]
    # zbctl sends the path it was given; the resource is named by its file name
    assert (process["bpmnProcessId"], process["version"], process["resourceName"]) == (
        "gw-double",
        1,
        "double.bpmn",
    )

    created = json.loads(
        run(zbctl, gateway, "create", "instance", "gw-double", "--variables", '{"amount": 1}')
    )
    assert (created["bpmnProcessId"], created["version"]) == ("gw-double", 1)
    assert created["processDefinitionKey"] == process["processDefinitionKey"]
    instance = int(created["processInstanceKey"])

    records = [r for rs in read_log(engine).partitions.values() for r in rs]
    creations = [
        r.value  # type: ignore[union-attr]
        for r in records
        if r.intent is ProcessInstanceCreationIntent.CREATED
    ]
    assert [(c.process_instance_key, json.loads(c.variables)) for c in creations] == [
        (instance, {"amount": 1})
    ]
    assert any(
        r.intent is ProcessInstanceIntent.ELEMENT_ACTIVATED
        and r.key == instance
        and r.value.bpmn_element_type is BpmnElementType.PROCESS  # type: ignore[union-attr]
        for r in records
    )
