"""The processes a benchmark starts (an engine worker, a job worker, a relay), each sampled for
CPU and memory while it runs, and the local broker's share of a phase."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from partita.bench.procstats import ProcessSample, sample, tree_sample, usage
from partita.errors import PartitaError

Progress = Callable[[str], None]


class Child:
    """A child process whose CPU and memory are sampled while it runs."""

    def __init__(
        self, name: str, args: list[str], log: Path, env: dict[str, str], tree: bool = False
    ) -> None:
        self.name = name
        self.log = log
        self.tree = tree
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                args, stdout=subprocess.PIPE, stderr=out, env={**os.environ, **env}, text=True
            )

    def wait_for_line(self, wanted: str, timeout: float) -> None:
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        for line in self.process.stdout:
            if line.strip() == wanted:
                return
            if time.monotonic() > deadline:
                break
        tail = self.log.read_text(errors="replace").splitlines()[-15:]
        raise PartitaError(f"{self.name} did not start; the end of its log:\n" + "\n".join(tail))

    def sample(self) -> ProcessSample:
        """The process (with `tree`: and its children, summed)."""
        return tree_sample(self.process.pid) if self.tree else sample(self.process.pid)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()


class Broker:
    """The local broker's CPU over a phase; nothing for a cluster elsewhere."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid

    def sample(self) -> ProcessSample | None:
        return None if self.pid is None else sample(self.pid)

    def usage(self, before: ProcessSample | None, seconds: float) -> dict[str, Any]:
        after = self.sample()
        if before is None or after is None:
            return {}
        return {"broker": usage(before, after, seconds)}
