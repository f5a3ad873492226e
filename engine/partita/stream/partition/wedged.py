"""Transactional calls into librdkafka that block long past their own timeout end the worker.

librdkafka's `send_offsets_to_transaction` waits for the group coordinator without checking
the timeout it was given (confluentinc/librdkafka#5456), and when the coordinator broker left
the cluster's metadata during a restart it may never be looked up again (#5511): the call then
blocks forever inside C, with nothing in the process able to unblock it. The worker would hold
its place in the group while processing nothing. A restart of a single-broker cluster at the
wrong moment does this (seen in `partita chaos`).

So each transactional call runs under a watch: when one is still blocked `WEDGED_AFTER_S`
past its own timeout, the process says which call and for how long, then exits with status
`EXIT_WEDGED`. Its supervisor (`partita worker --processes`), the chaos fleet or whatever runs
the worker starts a new one: the new producer fences the stuck transaction, and replay resumes
where the log says, exactly as after a kill -9.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_LOG = logging.getLogger("partita.worker")

WEDGED_AFTER_S = 30.0
"""How long past its own timeout a transactional call may block before the process ends."""

EXIT_WEDGED = 75
"""The exit status of a worker that ended on a blocked call (EX_TEMPFAIL: start it again)."""


def end_process(what: str, waited_s: float) -> None:
    """What a blocked call does by default: say so, flush the logs, exit at once (the blocked
    thread cannot be joined, and the store's write-ahead log makes an abrupt exit safe)."""
    _LOG.critical(
        "%s has been blocked for %.0f s, well past its timeout: librdkafka does not return"
        " (confluentinc/librdkafka#5456 and #5511, usually after a broker restart). Exiting"
        " with status %d; start the worker again (a supervisor does): it fences this"
        " transaction and resumes from the log",
        what,
        waited_s,
        EXIT_WEDGED,
    )
    for handler in logging.getLogger().handlers + logging.getLogger("partita").handlers:
        handler.flush()
    os._exit(EXIT_WEDGED)


class CallWatch:
    """Watches the calls made under `guard` from a daemon thread that looks once a second."""

    def __init__(
        self,
        on_blocked: Callable[[str, float], None] = end_process,
        *,
        grace_s: float = WEDGED_AFTER_S,
        every_s: float = 1.0,
    ) -> None:
        self._on_blocked = on_blocked
        self._grace_s = grace_s
        self._every_s = every_s
        self._calls: dict[int, tuple[str, float, float]] = {}
        """Calling thread -> (what, started, deadline) of the call it is in."""
        self._watcher: threading.Thread | None = None
        self._lock = threading.Lock()

    @contextmanager
    def guard(self, what: str, timeout_s: float) -> Iterator[None]:
        """Run the body as the call `what`, which should return within `timeout_s`."""
        if self._watcher is None:
            self._start()
        thread = threading.get_ident()
        started = time.monotonic()
        self._calls[thread] = (what, started, started + timeout_s + self._grace_s)
        try:
            yield
        finally:
            self._calls.pop(thread, None)

    def _start(self) -> None:
        with self._lock:
            if self._watcher is None:
                self._watcher = threading.Thread(
                    target=self._watch, name="partita-call-watch", daemon=True
                )
                self._watcher.start()

    def _watch(self) -> None:
        while True:
            time.sleep(self._every_s)
            now = time.monotonic()
            for thread, call in list(self._calls.items()):
                what, started, deadline = call
                if now > deadline and self._calls.get(thread) == call:
                    self._calls.pop(thread, None)  # reported once
                    self._on_blocked(what, now - started)


WATCH = CallWatch()
"""The process's watch over transactional calls."""
