"""The Node.js examples' reading of Kafka client properties files (examples/node/kafka-config.js:
the Java format, translated to kafkajs's `ssl` and `sasl`), by its own self-check under node's
test runner. It needs neither `npm install` nor a broker."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.support.paths import EXAMPLES

pytestmark = pytest.mark.interop

NODE_EXAMPLE = EXAMPLES / "node"


def test_the_node_examples_translate_kafka_properties_as_their_self_check_says() -> None:
    assert shutil.which("node"), "node is needed to check examples/node/kafka-config.js"
    result = subprocess.run(
        ["node", "--test", "kafka-config.test.js"],
        cwd=NODE_EXAMPLE,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# fail 0" in result.stdout, result.stdout
