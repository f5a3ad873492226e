"""PARTITA_NATIVE: which decoder the codec uses, and what happens when the compiled one is
asked for but missing."""

from __future__ import annotations

import sys

import pytest

from partita.errors import ConfigError
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import ValueType
from partita.protocol.native import mode, native_decoder
from partita.protocol.schemas import current_schema
from tests.support.sample_records import sample_record


def _installed() -> bool:
    try:
        import partita_native  # lazy: the optional compiled module
    except ImportError:
        return False
    return partita_native is not None


def test_the_codec_uses_the_compiled_decoder_as_partita_native_says() -> None:
    """The suite's main pass sets PARTITA_NATIVE=on and its second pass off: this is the test
    that shows each pass ran the decoder it claims."""
    expected = {"on": True, "off": False, "auto": _installed()}[mode()]
    assert RecordCodec().native is expected


def test_off_decodes_with_the_pure_python_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARTITA_NATIVE", "off")
    codec = RecordCodec()
    assert codec.native is False
    record = sample_record(ValueType.JOB)
    assert codec.decode(codec.encode(record)) == record


def test_on_without_the_compiled_module_says_how_to_build_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PARTITA_NATIVE", "on")
    monkeypatch.setitem(sys.modules, "partita_native", None)  # import raises ImportError
    with pytest.raises(ConfigError, match=r"not installed .*pip install ./native"):
        RecordCodec()
    monkeypatch.setenv("PARTITA_NATIVE", "auto")
    assert RecordCodec().native is False
    assert native_decoder(current_schema().raw) is None


def test_an_unknown_mode_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARTITA_NATIVE", "fast")
    with pytest.raises(ConfigError, match="PARTITA_NATIVE='fast': use one of auto, on, off"):
        RecordCodec()
