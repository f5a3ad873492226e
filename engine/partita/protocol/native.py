"""The compiled Avro codec (`partita_native`, built from `native/` by `scripts/setup`), when
there is one.

Its decoder and encoder interpret *programs* compiled here from the schema (see
`native/src/`). The decoder's has one entry per Avro record, `(class or None, ops)`, the
envelope first, and returns what `partita.protocol.decoder.compile_decoder` returns for the
same bytes: the envelope's fields as a tuple, its enums as symbols, the value as (Avro name,
value struct), nested enums as members; with an assembly (`native_record_decoder`) it also
builds the whole record. The encoder's has `(attribute names, ops, class)` per
record (instances of exactly that class are read from their slots; None: any object, through
getattr) and writes what `partita.protocol.encoder.compile_encoder` writes, behind the given
prefix.

`PARTITA_NATIVE` chooses: `auto` (the default) uses it when it is installed; `off` never does
(the pure-Python codec, which the test suite also runs); `on` requires it, failing at start
with the command that builds it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from partita.config.settings import NATIVE
from partita.errors import ConfigError
from partita.protocol.convert import snake_case
from partita.protocol.decoder import ENUM_CLASSES, VALUE_CLASSES, short
from partita.protocol.intents import INTENTS_BY_VALUE_TYPE

if TYPE_CHECKING:
    from partita_native import Admitter, Encoder

MODES = ("auto", "on", "off")
BUILD = ".venv/bin/python -m pip install ./native  (needs Rust's cargo; scripts/setup runs it)"

Decode = Callable[[bytes, int], tuple[tuple[Any, ...], int]]
Encode = Callable[[Any], bytes]


def mode() -> str:
    """`PARTITA_NATIVE`, checked (the setting is read by every command, not only workers)."""
    return NATIVE.read()


def _module(want: bool | None) -> Any:
    """The `partita_native` module, or None. `want` None follows `PARTITA_NATIVE` (auto: when
    installed); True requires it; False declines it."""
    chosen = mode() if want is None else ("on" if want else "off")
    if chosen == "off":
        return None
    try:
        import partita_native  # lazy: optional compiled extension, absent in a pure install
    except ImportError as exc:
        if chosen == "on":
            raise ConfigError(
                f"PARTITA_NATIVE=on but the compiled codec is not installed ({exc}); build it"
                f" with {BUILD}, or set PARTITA_NATIVE=auto"
            ) from None
        return None
    return partita_native


def native_decoder(schema: dict[str, Any], want: bool | None = None) -> Decode | None:
    """The compiled decoder of the envelope `schema`, or None for the pure-Python one."""
    module = _module(want)
    if module is None:
        return None
    decode: Decode = module.Decoder(compile_program(schema)).decode
    return decode


def native_encoder(
    schema: dict[str, Any], record_class: type[Any], prefix: bytes, want: bool | None = None
) -> Encode | None:
    """The compiled encoder of `record_class` instances with the envelope `schema`, writing
    `prefix` first; None for the pure-Python one."""
    module = _module(want)
    if module is None:
        return None
    encode: Encode = module.Encoder(compile_encoder_program(schema, record_class), prefix).encode
    return encode


def native_all_encoder(  # noqa: PLR0917 - the encoder's parts, each named at the call
    schema: dict[str, Any],
    record_class: type[Any],
    prefix: bytes,
    kinds: dict[Any, tuple[Any, type[Any]]],
    max_bytes: int,
    want: bool | None = None,
) -> Encoder | None:
    """The compiled encoder of lists of `record_class` instances (see `native_encoder`), whose
    `encode_all` and `produce_all` encode many records in one call: each record's intent must
    name its value type and value class as `kinds` does (intent -> (value type, value class))
    and its encoding be at most `max_bytes`, or they raise ValueError naming the first that is
    not. None for the pure-Python one."""
    module = _module(want)
    if module is None:
        return None
    program = compile_encoder_program(schema, record_class)
    encoder: Encoder = module.Encoder(program, prefix, kinds, max_bytes)
    return encoder


def native_admitter(compiled: tuple[Any, Any] | None, **parts: Any) -> Admitter | None:
    """The compiled loop of the common case of admission (`Admitter` in native/src/admit.rs),
    over a codec's compiled decoder and encoder (`RecordCodec.compiled`) and the `parts` it
    names; None without them."""
    if compiled is None:
        return None
    decoder, encoder = compiled
    admitter: Admitter = _module(True).Admitter(decoder, encoder, **parts)
    return admitter


RecordDecode = Callable[[bytes, int], Any]
"""`(data, position)` -> the record, or None when `data` is not a well-formed record of the
schema whose value type, intent and value agree (the caller's checked path says why)."""


def native_record_decoder(  # noqa: PLR0917 - the assembly's parts, each named at the call
    schema: dict[str, Any],
    record_class: type[Any],
    kinds: dict[tuple[str, str, type[Any]], tuple[Any, Any]],
    members: dict[str, dict[str, Any]],
    prefix: bytes,
    max_bytes: int,
    want: bool | None = None,
) -> RecordDecode | None:
    """The compiled decoder of whole records of the envelope `schema`: `record_class` built
    with its fields by name from the envelope's, `value_type` and `intent` from `kinds`
    ((value type symbol, intent symbol, value class) -> the pair), enum fields named in
    `members` as their objects, `position` as given; only behind `prefix` and up to
    `max_bytes`. None for the pure-Python one, or when the envelope lacks one of the fields
    (an older schema)."""
    module = _module(want)
    fields = [snake_case(field["name"]) for field in schema["fields"]]
    if module is None or not set(record_class.__struct_fields__) - {"position"} <= set(fields):
        return None
    arguments: list[tuple[Any, ...]] = []
    for name in record_class.__struct_fields__:
        if name == "position":
            arguments.append(("position",))
        elif name in ("value_type", "intent"):
            arguments.append(("kind", 0 if name == "value_type" else 1))
        elif name in members:
            arguments.append(("member", fields.index(name), members[name]))
        else:
            arguments.append(("field", fields.index(name)))
    kind_fields = (fields.index("value_type"), fields.index("intent"), fields.index("value"))
    assembly = (record_class, arguments, kind_fields, kinds, prefix, max_bytes)
    decode: RecordDecode = module.Decoder(compile_program(schema), assembly).decode_record
    return decode


def compile_program(schema: dict[str, Any]) -> list[tuple[type[Any] | None, tuple[Any, ...]]]:
    """The native decoder's program for the envelope `schema` (record 0)."""
    return _Program().build(schema)


class _Program:
    def __init__(self) -> None:
        self.entries: list[tuple[type[Any] | None, tuple[Any, ...]]] = []
        self.index: dict[str, int] = {}

    def build(self, schema: dict[str, Any]) -> list[tuple[type[Any] | None, tuple[Any, ...]]]:
        self.record(schema, envelope=True)
        return self.entries

    def record(self, schema: dict[str, Any], *, envelope: bool = False) -> int:
        name = short(schema["name"])
        if name in self.index:
            return self.index[name]
        at = len(self.entries)
        self.index[name] = at
        self.entries.append((None, ()))  # reserved: fields may refer back to this record
        ops = tuple(self.op(field["type"], symbols=envelope) for field in schema["fields"])
        cls = None if envelope else VALUE_CLASSES[name]
        if cls is not None:
            fields = tuple(snake_case(field["name"]) for field in schema["fields"])
            if fields != cls.__struct_fields__[: len(fields)]:  # positional, later ones default
                raise TypeError(f"{cls.__name__}'s fields do not begin with those of {name}")
        self.entries[at] = (cls, ops)
        return at

    def op(self, avro_type: Any, *, symbols: bool = False) -> tuple[Any, ...]:
        if isinstance(avro_type, str):
            if avro_type in ("long", "int"):
                return ("long",)
            if avro_type in ("string", "bytes", "boolean", "null"):
                return (avro_type,)
            return ("record", self.index[short(avro_type)])
        if isinstance(avro_type, list):
            if len(avro_type) == 2 and avro_type[0] == "null":
                return ("nullable", self.op(avro_type[1], symbols=symbols))
            branches = []
            for branch in avro_type:
                name = branch["name"] if isinstance(branch, dict) else branch
                index = self.record(branch) if isinstance(branch, dict) else self.index[short(name)]
                branches.append((name, index))
            return ("union", tuple(branches))
        kind = avro_type["type"]
        if kind == "record":
            return ("record", self.record(avro_type))
        if kind == "enum":
            cls = ENUM_CLASSES.get(short(avro_type["name"]))
            names = avro_type["symbols"]
            members = tuple(names) if symbols or cls is None else tuple(cls[s] for s in names)
            return ("enum", members)
        if kind == "array":
            return ("array", self.op(avro_type["items"]))
        if kind == "map":
            return ("map", self.op(avro_type["values"]))
        return self.op(kind, symbols=symbols)


EncoderEntry = tuple[tuple[str, ...], tuple[Any, ...], type[Any] | None]


def compile_encoder_program(schema: dict[str, Any], record_class: type[Any]) -> list[EncoderEntry]:
    """The native encoder's program for `record_class` instances of the envelope `schema`."""
    return _EncoderProgram({**VALUE_CLASSES, short(schema["name"]): record_class}).build(schema)


class _EncoderProgram:
    def __init__(self, classes: dict[str, type[Any]]) -> None:
        self.classes = classes
        self.entries: list[EncoderEntry] = []
        self.index: dict[str, int] = {}

    def build(self, schema: dict[str, Any]) -> list[EncoderEntry]:
        self.record(schema)
        return self.entries

    def record(self, schema: dict[str, Any]) -> int:
        name = short(schema["name"])
        if name in self.index:
            return self.index[name]
        at = len(self.entries)
        self.index[name] = at
        self.entries.append(((), (), None))  # reserved: fields may refer back to this record
        attributes = tuple(snake_case(field["name"]) for field in schema["fields"])
        ops = tuple(self.op(f["type"]) for f in schema["fields"])
        self.entries[at] = (attributes, ops, self.classes.get(name))
        return at

    def op(self, avro_type: Any) -> tuple[Any, ...]:
        if isinstance(avro_type, str):
            if avro_type in ("long", "int", "string", "bytes", "boolean", "null"):
                return (avro_type,)
            return ("record", self.index[short(avro_type)])
        if isinstance(avro_type, list):
            if len(avro_type) == 2 and avro_type[0] == "null":
                return ("nullable", self.op(avro_type[1]))
            branches: dict[type[Any], tuple[int, int]] = {}
            for at, branch in enumerate(avro_type):
                name = short(branch["name"] if isinstance(branch, dict) else branch)
                index = self.record(branch) if isinstance(branch, dict) else self.index[name]
                branches[self.classes[name]] = (at, index)
            return ("union", branches)
        kind = avro_type["type"]
        if kind == "record":
            return ("record", self.record(avro_type))
        if kind == "enum":
            name = short(avro_type["name"])
            members = (
                [m for enum in INTENTS_BY_VALUE_TYPE.values() for m in enum]
                if name == "Intent"  # one Avro enum for the intents of every value type
                else list(ENUM_CLASSES[name])
            )
            symbols = {symbol: i for i, symbol in enumerate(avro_type["symbols"])}
            return ("enum", {m: symbols[m.name] for m in members if m.name in symbols})
        if kind == "array":
            return ("array", self.op(avro_type["items"]))
        if kind == "map":
            return ("map", self.op(avro_type["values"]))
        return self.op(kind)
