"""CPU time and peak memory of a process, from /proc (Linux) or getrusage (this process)."""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class ProcessSample:
    cpu_s: float
    """User plus system CPU seconds since the process started."""
    peak_rss_mb: float


def sample(pid: int | None = None) -> ProcessSample:
    """This process (pid None), or another one while it is running."""
    if pid is None or pid == os.getpid():
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return ProcessSample(usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime
    peak = 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            peak = int(line.split()[1]) / 1024
    return ProcessSample(cpu, peak)


def rss_mb(pid: int) -> float:
    """The resident set of a running process now (VmRSS), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def tree_sample(pid: int) -> ProcessSample:
    """A running process and its children (one level: a supervisor's workers), summed: CPU
    seconds and peak RSS of each. A child that ended in between counts no more."""
    total = sample(pid)
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    for child in children:
        try:
            each = sample(int(child))
        except (FileNotFoundError, ProcessLookupError):
            continue
        total = ProcessSample(total.cpu_s + each.cpu_s, total.peak_rss_mb + each.peak_rss_mb)
    return total


def usage(before: ProcessSample, after: ProcessSample, seconds: float) -> dict[str, float]:
    """CPU share of one core over the interval, and the peak RSS so far."""
    return {
        "cpu_percent": round(100 * (after.cpu_s - before.cpu_s) / max(seconds, 1e-9), 1),
        "peak_rss_mb": round(after.peak_rss_mb, 1),
    }
