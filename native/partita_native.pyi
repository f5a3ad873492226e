"""Partita's compiled core (native/src): the Avro decoder and encoder, the produce loop
(`Encoder.produce_all`) and the common case of admission (`Admitter`). The programs they
interpret are compiled from the schema by `partita.protocol.native`."""

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, TypeAlias, TypeVar, final

__all__ = ["Admitter", "Decoder", "Encoder"]

_Headers: TypeAlias = list[tuple[str, str | bytes | None]]
"""Kafka headers as confluent-kafka takes and returns them."""

_DecoderOp: TypeAlias = (
    tuple[Literal["long", "string", "bytes", "boolean", "null"]]
    | tuple[Literal["enum"], Iterable[object]]
    | tuple[Literal["nullable", "array", "map"], _DecoderOp]
    | tuple[Literal["union"], Iterable[tuple[object, int]]]
    | tuple[Literal["record"], int]
)
"""`("enum", symbols)`: the index picks a symbol; `("union", ((name, record index), ...))` gives
`(name, value)`; `("record", index)`: a record of the program; arrays give tuples, maps dicts."""

_DecoderRecord: TypeAlias = tuple[Callable[..., Any] | None, Iterable[_DecoderOp]]
"""`(class or None, ops)`: the class called with the fields in order, or None for a tuple."""

_AssemblyArgument: TypeAlias = (
    tuple[Literal["field"], int]
    | tuple[Literal["member"], int, dict[Any, Any]]
    | tuple[Literal["kind"], Literal[0, 1]]
    | tuple[Literal["position"]]
)
"""An argument of the record class: envelope field i; enum field i's symbol mapped to its
object (`{symbol: object}`); the first or second object of the `kinds` lookup; the position."""

_Assembly: TypeAlias = tuple[
    Callable[..., Any],
    Iterable[_AssemblyArgument],
    tuple[int, int, int],
    dict[tuple[Any, Any, type[Any]], tuple[Any, Any]],
    bytes,
    int,
]
"""`(record class, arguments, (value type field, intent field, value field), {(value type
symbol, intent symbol, value class): (object, object)}, prefix, max bytes)`."""

_EncoderOp: TypeAlias = (
    tuple[Literal["long", "int", "string", "bytes", "boolean", "null"]]
    | tuple[Literal["enum"], dict[Any, int]]
    | tuple[Literal["nullable", "array", "map"], _EncoderOp]
    | tuple[Literal["union"], dict[type[Any], tuple[int, int]]]
    | tuple[Literal["record"], int]
)
"""`("enum", {member: index})`, `("union", {class: (branch, record index)})`, members and
classes matched by identity; `("int",)` is 32 bits."""

_EncoderRecord: TypeAlias = (
    tuple[Iterable[str], Iterable[_EncoderOp], type[Any] | None]
    | tuple[Iterable[str], Iterable[_EncoderOp]]
)
"""`(attribute names, ops, class or None)`: instances of exactly the class are read from its
slots, anything else through getattr."""

_Report = TypeVar("_Report")

@final
class Decoder:
    """Decodes Avro binary with a program; with an assembly, whole records too."""

    def __new__(
        cls, program: Iterable[_DecoderRecord], assembly: _Assembly | None = None
    ) -> Decoder:
        """Raises TypeError or ValueError for a malformed program or assembly (a record index
        the program does not define, an unknown op, a field record 0 lacks)."""

    def decode(self, buf: bytes, pos: int) -> tuple[Any, int]:
        """Record 0 of the program from `buf` at `pos` (its tuple of fields, or its class's
        object) and where it ends. Raises ValueError for malformed input, saying what and at
        which byte."""

    def decode_record(self, data: bytes, position: int) -> Any | None:
        """The object the assembly makes of `data` (the prefix, then record 0 ending where
        `data` ends), with `position`; None when `data` is anything else. Raises ValueError
        when the decoder was built without an assembly."""

@final
class Encoder:
    """Encodes objects as Avro binary with a program, each behind `prefix`."""

    def __new__(
        cls,
        program: Iterable[_EncoderRecord],
        prefix: bytes,
        kinds: dict[Any, tuple[Any, type[Any]]] | None = None,
        max_bytes: int = 0,
    ) -> Encoder:
        """`kinds`: `{intent: (value type, value class)}`, the agreement `encode_all` and
        `produce_all` check; `max_bytes`: the largest encoding they return (0: any)."""

    def encode(self, value: object) -> bytes:
        """The prefix, then `value` as record 0 of the program. Raises TypeError,
        OverflowError, KeyError, ValueError or AttributeError for a value it cannot encode."""

    def encode_all(self, records: list[Any]) -> list[bytes]:
        """`encode` of each record, each checked against `kinds` and `max_bytes` (ValueError
        naming the first that fails)."""

    def produce_all(
        self,
        produce: Callable[
            [str, bytes, bytes | None, int, _Report | None, None, int, _Headers], object
        ],
        topic: str,
        pairs: list[tuple[int, Any]],
        start: int,
        end: int,
        own: int,
        headers_of: Callable[[Any], _Headers],
        command: object,
        timestamp: int,
        specials: list[tuple[int, _Report | None, _Headers | None]],
    ) -> tuple[int, bool]:
        """Encodes the `(partition, record)` pairs `pairs[start:end]` as `encode_all` does
        (raising as it does before anything is produced), then calls, for each in order,
        `produce(topic, value, key, partition, on_delivery, None, timestamp, headers)`: `key`
        the 8 big-endian bytes of a `command` record's positive key, else None; `headers`
        `headers_of(record)`, kept per record type and intent; `on_delivery` None but for the
        `specials` `(index, on_delivery, headers or None)`, in index order, whose headers also
        replace the record's. Returns how many records went to partition `own`, and whether one
        of them is a `command`."""

@final
class Admitter:
    """The common case of admitting client commands: takes the ingress records the Python path
    would copy unchanged into the log, and stops at any other."""

    def __new__(
        cls,
        decoder: Decoder,
        encoder: Encoder,
        command: object,
        intents: Iterable[object],
        no_key_check: object,
        own: int,
        route: Callable[[Any], int] | None,
        normalised: Sequence[int],
        copy: Callable[[Any, bytes, _Headers, Any], object],
        reply_to: Callable[[_Headers], object],
        headers_of: Callable[[Any], _Headers],
        ingress_offset: str,
    ) -> Admitter:
        """`decoder` built with an assembly (else ValueError); `encoder` the batch encoder,
        whose checks each copy passes; `command`: the COMMAND record type; `intents`: those
        clients may send; `no_key_check`: the value type whose records Python admits; `own`:
        this partition; `route(record)`: a command's partition (None: always `own`);
        `normalised`: the indexes of the record class's partition_id, timestamp,
        source_record_position, rejection_type and rejection_reason arguments (5);
        `copy(record, value, headers, reply)` builds a copy; `reply_to(headers)` and
        `headers_of(record)` as in `partita.protocol.headers`; `ingress_offset`: the header
        naming a copy's ingress offset."""

    def take(
        self,
        messages: list[Any],
        start: int,
        first: int,
        now: int,
        position: int,
        copies: list[Any],
    ) -> tuple[int, int]:
        """Takes `messages[start:]` (consumed Kafka messages) in order while each is the common
        case: those at offsets from `first` on become copies appended to `copies`, at log
        position `position + len(copies)`, with timestamp `now`; earlier ones are passed over.
        Returns the index of the first message the Python path must decide (or `len(messages)`)
        and how many messages from `first` on it took."""
