"""`partita bench gateway` on the real broker, small: every path (Partita's own client, gRPC with
a long-polling worker, gRPC with a job stream, REST) completes every instance it created, and the
JSON names each path's figures and the gateway paths' ratio to the native one. At the fixed rate
the paths take turns (one-second slots), and each gateway path's figures say so and give the
gateway's CPU in that path's slots, set beside the floor measured first (what empty gRPC and
HTTP requests cost their server)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from partita.config import Config
from tests.support.paths import ROOT
from tests.support.worker_processes import clean_kafka_env

pytestmark = pytest.mark.kafka


def test_every_path_completes_its_instances(kafka_bootstrap: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "partita.cli",
            "bench",
            "gateway",
            "--bootstrap-servers",
            kafka_bootstrap,
            "--instances",
            "60",
            "--latency-instances",
            "60",
            "--rate",
            "40",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env={**clean_kafka_env(), "PARTITA_HOME": str(Config.from_env().home)},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert list(result["paths"]) == ["native", "grpc", "grpc-stream", "rest"]
    for protocol in ("grpc", "http"):
        assert result["floor"][protocol]["requests"] == 60
        assert result["floor"][protocol]["server_cpu_us_per_request"] > 0
    for path, figures in result["paths"].items():
        for phase in ("saturation", "fixed_rate"):
            assert figures[phase]["completed"] == 60, (path, phase, figures[phase])
            assert figures[phase]["latency_ms_p50"] <= figures[phase]["latency_ms_p99"]
        assert figures["fixed_rate"]["turns"] == {"slot_s": 1.0, "paths": 4}
        if path != "native":
            assert figures["vs_native"]["p50"] > 0
            assert figures["fixed_rate"]["gateway"]["cpu_percent"] > 0
            assert figures["gateway_cpu"]["ms_per_instance"] > 0
            assert figures["gateway_cpu"]["floor_ms_per_instance"] > 0
    assert "instances/s saturated" in done.stderr
