from __future__ import annotations

import pytest

from partita.config import Config
from partita.log.topics import TopicSpecError, load_specs


def test_specs_resolve_namespace_and_log_partitions() -> None:
    specs = {s.key: s for s in load_specs(Config(namespace="shop", partitions=7))}
    assert set(specs) == {"log", "commands", "snapshots", "replies"}
    assert specs["log"].name == "shop.log"
    assert specs["log"].partitions == 7
    assert specs["snapshots"].partitions == 7  # one snapshot partition per log partition
    assert specs["replies"].partitions == 3
    assert specs["log"].config["retention.ms"] == "-1"
    assert int(specs["log"].config["max.message.bytes"]) >= 4 * 1024 * 1024


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[topics.x]\npartitions = 1\n", r"\[topics.x\]: 'name' must be"),
        ('[topics.x]\nname = "a"\npartitions = 0\n', "'partitions' must be a positive"),
        ('[topics.x]\nname = "a"\npartitions = 1\nconfig = { "retention.ms" = 1 }\n', "string"),
        ("[topics\n", "not valid TOML"),
        ("", "declares no"),
    ],
)
def test_malformed_specs_are_reported(text: str, message: str) -> None:
    with pytest.raises(TopicSpecError, match=message):
        load_specs(Config(), text)
