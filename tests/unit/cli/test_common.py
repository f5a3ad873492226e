"""`unwinds_on_sigterm`: a command that starts processes of its own (the demo, the benchmarks)
runs its `finally` blocks when it gets SIGTERM, so the processes it started are stopped."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from partita.cli.common import unwinds_on_sigterm

_COMMAND = textwrap.dedent(
    """
    import subprocess, sys, time
    from partita.cli.common import unwinds_on_sigterm

    @unwinds_on_sigterm
    def command(marker):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            print(child.pid, flush=True)
            time.sleep(60)
            return 0
        finally:
            child.terminate()
            child.wait(10)
            open(marker, "w").write(str(child.returncode))

    sys.exit(command(sys.argv[1]))
    """
)


def test_sigterm_runs_the_commands_finally_blocks_and_exits_143(tmp_path: Path) -> None:
    marker = tmp_path / "stopped"
    process = subprocess.Popen(
        [sys.executable, "-c", _COMMAND, str(marker)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    child = int(process.stdout.readline())
    process.send_signal(signal.SIGTERM)
    assert process.wait(30) == 143
    assert marker.read_text() == str(-signal.SIGTERM), "the command's child was not stopped"
    assert not Path(f"/proc/{child}").exists()


def test_the_previous_handler_is_back_once_the_command_returns() -> None:
    @unwinds_on_sigterm
    def command(value: int, *, twice: bool = False) -> int:
        assert signal.getsignal(signal.SIGTERM) not in {signal.SIG_DFL, signal.SIG_IGN}
        return value * (2 if twice else 1)

    before = signal.getsignal(signal.SIGTERM)
    assert command(21, twice=True) == 42
    assert signal.getsignal(signal.SIGTERM) is before
