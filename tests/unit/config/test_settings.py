"""The settings table: declared once, read only by the config module, one parser per type, and
docs/configuration.md generated from it."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest

from partita.config import Config
from partita.config import docs as config_docs
from partita.config.parsers import parse_bool
from partita.config.settings import SETTINGS, STANDBY, TRUNCATE
from partita.errors import ConfigError
from tests.support.paths import ENGINE, ROOT

PACKAGE = ENGINE


def test_the_configuration_page_is_generated_from_the_table() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text()
    assert config_docs.rewrite(page) == page, (
        "docs/configuration.md is stale: run `python -m partita.config.docs docs/configuration.md`"
    )
    for setting in SETTINGS:
        assert f"| `{setting.env}` |" in page


def test_a_new_setting_shows_in_the_generated_page(monkeypatch: pytest.MonkeyPatch) -> None:
    page = (ROOT / "docs" / "configuration.md").read_text()
    extra = STANDBY.__class__(
        "PARTITA_EXAMPLE", parse_bool, "false", "an example", "Examples", readers="nobody"
    )
    monkeypatch.setattr(config_docs, "SETTINGS", (*SETTINGS, extra))
    assert config_docs.rewrite(page) != page
    assert "| `PARTITA_EXAMPLE` |  | `false` | nobody | an example |" in config_docs.render()


def test_every_config_field_is_declared_once_with_its_default() -> None:
    declared = [s.field for s in SETTINGS if s.field is not None]
    assert len(declared) == len(set(declared)), "a Config field declared twice"
    names = {f.name for f in fields(Config)}
    assert set(declared) <= names
    assert names - set(declared) == set(), f"Config fields with no setting: {names - set(declared)}"
    config = Config()
    for setting in SETTINGS:
        if setting.field not in (None, "home", "kafka_role_configs"):
            assert getattr(config, setting.field) == setting.default, setting.env


def test_a_default_written_out_is_its_text_parsed() -> None:
    for setting in SETTINGS:
        if setting.parsed_default is not None:
            assert setting.parse(setting.default_text, setting.env) == setting.parsed_default


@pytest.mark.parametrize("text", ["true", "TRUE", "True", "1", "yes", "YES", " yes "])
def test_a_boolean_takes_true_1_and_yes_in_any_case(text: str) -> None:
    assert Config.from_env({"PARTITA_STANDBY": text, "PARTITA_TRUNCATE": text}).standby is True
    assert parse_bool(text, "X") is True


@pytest.mark.parametrize("text", ["false", "FALSE", "0", "no", "No"])
def test_a_boolean_takes_false_0_and_no_in_any_case(text: str) -> None:
    config = Config.from_env({"PARTITA_STANDBY": text, "PARTITA_TRUNCATE": text})
    assert (config.standby, config.truncate) == (False, False)


@pytest.mark.parametrize("setting", [STANDBY, TRUNCATE])
@pytest.mark.parametrize("text", ["maybe", "on", "2", "ja"])
def test_a_boolean_refuses_anything_else_naming_the_setting_and_value(
    setting: object, text: str
) -> None:
    name = setting.env  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match=f"{name}='{text}' is not a boolean"):
        Config.from_env({name: text})


def test_the_skip_list_and_the_codec_choice_are_settings() -> None:
    config = Config.from_env({"PARTITA_SKIP_RECORDS": "2:1234, 0:77", "PARTITA_NATIVE": "OFF"})
    assert config.skip_records == {(2, 1234), (0, 77)}
    assert (config.native, config.native_wanted) == ("off", False)
    with pytest.raises(ConfigError, match="PARTITA_NATIVE='fast': use one of auto, on, off"):
        Config.from_env({"PARTITA_NATIVE": "fast"})
    with pytest.raises(ConfigError, match="PARTITA_SKIP_RECORDS: '2-1' is not PARTITION:OFFSET"):
        Config.from_env({"PARTITA_SKIP_RECORDS": "2-1"})


def _reads_of_partita_variables(path: Path) -> list[int]:
    """Lines of `path` that read a PARTITA_* variable from the environment by name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call | ast.Subscript):
            text = ast.unparse(node)
            reads = ("environ" in text or "getenv" in text) and "'PARTITA_" in text
            if reads and "{" not in text:
                found.append(node.lineno)
    return found


def test_no_module_outside_the_config_package_reads_a_partita_variable() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.parent.name != "config" and (lines := _reads_of_partita_variables(path))
    }
    assert offenders == {}, f"read these through partita.config.settings: {offenders}"


def test_the_check_sees_a_read(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("import os\nx = os.environ.get('PARTITA_X')\ny = os.environ['PARTITA_Y']\n")
    assert _reads_of_partita_variables(probe) == [2, 3]
