"""Partita's compiled Avro decoder (see native/src/lib.rs and engine/protocol/native.py)."""

from typing import Any

class Decoder:
    def __init__(self, program: Any) -> None: ...
    def decode(self, buf: bytes, pos: int) -> tuple[Any, int]: ...
