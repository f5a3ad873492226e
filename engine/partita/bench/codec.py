"""`partita bench codec`: per-record encode and decode time of the Avro codec.

Two typical records: a JOB CREATED event with variables and headers (the record every job
worker reads) and a PROCESS_INSTANCE ELEMENT_ACTIVATED event (the most frequent record on the
log). Each figure is the median over `rounds` rounds of `batch` back-to-back calls.

Beside them, the variables documents' JSON (`partita.protocol.json_text`) against the standard
library's `json` in the same run: reading a command's document as the engine checks it (the
standard library needs a second, writing pass to refuse `1e999` and lone surrogates) and
writing a value back, for a small document and one of about 1 KB.
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import fastavro

from partita import __version__
from partita.protocol import json_text
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import BpmnElementType, BpmnEventType
from partita.protocol.intents import JobIntent, ProcessInstanceIntent
from partita.protocol.records import Record, event
from partita.protocol.values import JobValue, ProcessInstanceValue

_INSTANCE = 2251799813685249
_DEFINITION = 2251799813685250


def typical_records() -> dict[str, Record]:
    job = JobValue(
        type="payment-service",
        retries=3,
        variables='{"orderId": "ORD-4711", "amount": 99.5, "currency": "EUR"}',
        custom_headers={"method": "card"},
        process_instance_key=_INSTANCE,
        bpmn_process_id="order-process",
        process_definition_version=3,
        process_definition_key=_DEFINITION,
        element_id="charge-card",
        element_instance_key=_INSTANCE + 7,
    )
    element = ProcessInstanceValue(
        bpmn_process_id="order-process",
        version=3,
        process_definition_key=_DEFINITION,
        process_instance_key=_INSTANCE,
        element_id="charge-card",
        flow_scope_key=_INSTANCE,
        bpmn_element_type=BpmnElementType.SERVICE_TASK,
        bpmn_event_type=BpmnEventType.UNSPECIFIED,
    )
    common: dict[str, Any] = {
        "partition_id": 1,
        "timestamp": 1_764_000_000_000,
        "source_record_position": 42,
        "engine_version": __version__,
    }
    return {
        "job": event(JobIntent.CREATED, job, _INSTANCE + 8, **common),
        "process_instance": event(
            ProcessInstanceIntent.ELEMENT_ACTIVATED, element, _INSTANCE + 7, **common
        ),
    }


def typical_documents() -> dict[str, str]:
    """A job's variables as a worker completes it, and an order of about 1 KB."""
    order = {
        "orderId": "ORD-4711",
        "customer": {"name": "Jürgen Müller", "vip": True, "tags": ["b2b", "eu"]},
        "items": [{"sku": f"SKU-{i:04d}", "qty": i, "price": 9.99 + i} for i in range(10)],
        "total": 1234.5,
        "paid": False,
    }
    return {
        "small": '{"orderId": "ORD-4711", "amount": 99.5, "approved": true}',
        "1kb": json.dumps(order, ensure_ascii=False),
    }


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)


def _stdlib_read(text: str) -> Any:
    """What the engine did before `json_text`: read, then write to refuse what JSON is not."""
    value = json.loads(text, parse_constant=_refuse_constant)
    json.dumps(value, ensure_ascii=False, allow_nan=False).encode()
    return value


def _stdlib_write(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _json_figures(rounds: int, batch: int) -> dict[str, dict[str, float]]:
    figures: dict[str, dict[str, float]] = {
        "read_us": {},
        "write_us": {},
        "read_us_stdlib": {},
        "write_us_stdlib": {},
    }
    for name, text in typical_documents().items():
        value = json_text.parse(text)
        assert value == _stdlib_read(text), "the JSON readers disagree"
        assert json_text.parse(json_text.write(value)) == value, "write lost a value"
        for suffix, read, write in (
            ("", json_text.parse, json_text.write),
            ("_stdlib", _stdlib_read, _stdlib_write),
        ):
            figures[f"read_us{suffix}"][name] = _median_us(lambda: read(text), rounds, batch)  # noqa: B023 - timed now
            figures[f"write_us{suffix}"][name] = _median_us(lambda: write(value), rounds, batch)  # noqa: B023
    return figures


def _median_us(call: Callable[[], object], rounds: int, batch: int) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(batch):
            call()
        samples.append((time.perf_counter() - started) / batch * 1e6)
    return round(statistics.median(samples), 2)


def run(rounds: int = 15, batch: int = 2000) -> dict[str, Any]:
    """The figures of the process's codec (compiled or not, as PARTITA_NATIVE says); with the
    compiled codec, the pure-Python one's in the same run beside them."""
    codec = RecordCodec()
    pure = RecordCodec(native=False) if codec.native else None
    encode_us: dict[str, float] = {}
    decode_us: dict[str, float] = {}
    encode_pure_us: dict[str, float] = {}
    decode_pure_us: dict[str, float] = {}
    sizes: dict[str, int] = {}
    for name, record in typical_records().items():
        data = codec.encode(record)
        assert codec.decode(data) == record, "round trip changed the record"
        sizes[name] = len(data)
        encode_us[name] = _median_us(lambda r=record: codec.encode(r), rounds, batch)  # type: ignore[misc]
        decode_us[name] = _median_us(lambda d=data: codec.decode(d), rounds, batch)  # type: ignore[misc]
        if pure is not None:
            assert pure.decode(data) == record, "the decoders disagree"
            assert pure.encode(record) == data, "the encoders disagree"
            encode_pure_us[name] = _median_us(lambda r=record: pure.encode(r), rounds, batch)  # type: ignore[misc]
            decode_pure_us[name] = _median_us(lambda d=data: pure.decode(d), rounds, batch)  # type: ignore[misc]
    return {
        "bench": "codec",
        "codec": "compiled" if codec.native else "pure-python",
        "encode_us": encode_us,
        "decode_us": decode_us,
        **(
            {"encode_us_pure_python": encode_pure_us, "decode_us_pure_python": decode_pure_us}
            if pure is not None
            else {}
        ),
        "bytes": sizes,
        "variables_json": {
            **_json_figures(rounds, batch),
            "bytes": {name: len(text.encode()) for name, text in typical_documents().items()},
        },
        "rounds": rounds,
        "batch": batch,
        "python": platform.python_version(),
        "fastavro": fastavro.__version__,
    }
