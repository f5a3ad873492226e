"""`partita ...` commands: placeholder, filled in by the ops work."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

AddCommand = Callable[..., argparse.ArgumentParser]


def register(commands: Any, add: AddCommand) -> None:
    """Add the ops commands to the `partita` parser (`add` is the CLI's helper)."""
