//! Partita's compiled core: the Avro decoder and encoder, and two loops of the hot path.
//!
//! The decoder knows nothing of Partita's schema. Python compiles the schema into a *program*
//! (`engine/protocol/native.py`): one entry per Avro record, `(class or None, (op, ...))`, where
//! an op is one of
//!
//! - `("long",)` for int and long, `("string",)`, `("bytes",)`, `("boolean",)`, `("null",)`;
//! - `("enum", symbols)`: the index picks one of `symbols` (any Python objects);
//! - `("nullable", op)`: the union `["null", T]`;
//! - `("union", ((name, record index), ...))`: gives `(name, value)`;
//! - `("record", record index)`, `("array", op)` (gives a tuple), `("map", op)` (gives a dict).
//!
//! A record with a class is built by calling the class with its fields in schema order; the
//! first record (the envelope) has none and comes back as a tuple. The result is exactly what
//! the pure-Python decoder of `engine/protocol/decoder.py` returns, which the parity tests check.
//! Given an *assembly* too (`Assembly`), `decode_record` builds the whole record object from the
//! envelope, as `engine.protocol.codec` does from that tuple.
//! Malformed input raises `ValueError` naming what was wrong and at which byte; nothing panics.
//!
//! Two loops of the stream's hot path are built on the decoder and the encoder (`Encoder`):
//! `Encoder.produce_all` encodes a batch's records and hands each to the producer's `produce`
//! (`engine.stream.transaction`), and `Admitter` takes the common case of admitting client
//! commands (`engine.stream.ingress`). Both stand beside a Python path that stays the
//! reference: parity fuzz tests compare them, and the pure-Python suite runs without them.

use std::collections::{HashMap as StdHashMap, HashSet as StdHashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;

use pyo3::exceptions::{PyKeyError, PyOverflowError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PyString, PyTuple, PyType};

/// Every table here is keyed by object addresses (and pairs of symbols), looked up for each
/// field of each record: a multiply-rotate hash instead of the default SipHash, which is built
/// to resist chosen keys (these come from the interpreter, not from the input).
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0.rotate_left(26) // the multiply leaves an aligned address's low bits at zero
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.write_u64(u64::from(*byte));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

type HashMap<K, V> = StdHashMap<K, V, BuildHasherDefault<AddressHasher>>;
type HashSet<K> = StdHashSet<K, BuildHasherDefault<AddressHasher>>;

/// The headers of each kind of record, as `headers_of(record)` gives them (a shared list per
/// kind, `engine.protocol.headers.record_headers`), kept by the addresses of the record's
/// type and intent (enum members, which live as long as the interpreter).
#[derive(Default)]
struct HeaderCache(Mutex<HashMap<(usize, usize), Py<PyAny>>>);

impl HeaderCache {
    fn get<'py>(
        &self,
        record: &Bound<'py, PyAny>,
        record_type: &Bound<'py, PyAny>,
        intent: &Bound<'py, PyAny>,
        headers_of: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = record.py();
        let kind = (record_type.as_ptr() as usize, intent.as_ptr() as usize);
        let table = || {
            self.0
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        };
        if let Some(found) = table().get(&kind) {
            return Ok(found.clone_ref(py).into_bound(py));
        }
        let found = headers_of.call1((record,))?;
        table().insert(kind, found.clone().unbind());
        Ok(found)
    }
}

enum Op {
    Long,
    Text,
    Bytes,
    Boolean,
    Null,
    Enum(Vec<Py<PyAny>>),
    Nullable(Box<Op>),
    Union(Vec<(Py<PyAny>, usize)>),
    Record(usize),
    Array(Box<Op>),
    Map(Box<Op>),
}

struct RecordProgram {
    class: Option<Py<PyAny>>,
    fields: Vec<Op>,
}

/// Records inside records, at most: the schema nests a few levels, and a recursive schema must
/// not let a hostile record exhaust the stack.
const MAX_DEPTH: u32 = 64;

struct Malformed(String);

type Read<T> = Result<T, Malformed>;

struct Reader<'a, 't> {
    buf: &'a [u8],
    pos: usize,
    texts: &'t mut Texts,
}

/// Strings met lately, by their bytes: the same few (process ids, element ids, tenants, job
/// types) fill most records, and a string shared instead of made again also brings its cached
/// hash to the dict lookups that follow. Direct-mapped, so its size is fixed whatever it reads.
struct Texts {
    slots: Vec<Option<(Box<[u8]>, Py<PyString>)>>,
}

const TEXT_SLOTS: usize = 1024;

/// Longer strings are made each time (documents, messages: rarely repeated as a whole).
const TEXT_SHARED_UP_TO: usize = 64;

impl Texts {
    fn new() -> Self {
        Texts {
            slots: (0..TEXT_SLOTS).map(|_| None).collect(),
        }
    }

    fn string(&mut self, py: Python<'_>, text: &str) -> Py<PyAny> {
        let bytes = text.as_bytes();
        if bytes.len() > TEXT_SHARED_UP_TO {
            return PyString::new(py, text).into_any().unbind();
        }
        let mut hash: u32 = 0x811c_9dc5; // FNV-1a
        for &b in bytes {
            hash = (hash ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
        let slot = &mut self.slots[hash as usize % TEXT_SLOTS];
        if let Some((seen, string)) = slot {
            if **seen == *bytes {
                return string.clone_ref(py).into_any();
            }
        }
        let string = PyString::new(py, text).unbind();
        *slot = Some((bytes.into(), string.clone_ref(py)));
        string.into_any()
    }
}

impl<'a> Reader<'a, '_> {
    #[inline(always)]
    fn byte(&mut self) -> Read<u8> {
        match self.buf.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(Malformed(format!(
                "record ends at byte {} inside a value",
                self.pos
            ))),
        }
    }

    #[inline(always)]
    fn long(&mut self) -> Read<i64> {
        let start = self.pos;
        let mut n: u64 = 0;
        let mut shift = 0u32;
        loop {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                return Err(Malformed(format!(
                    "varint at byte {start} overflows 64 bits"
                )));
            }
            n |= u64::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Ok(((n >> 1) as i64) ^ -((n & 1) as i64));
            }
            shift += 7;
        }
    }

    fn slice(&mut self) -> Read<&'a [u8]> {
        let at = self.pos;
        let size = self.long()?;
        let end = usize::try_from(size)
            .ok()
            .and_then(|size| self.pos.checked_add(size))
            .filter(|&end| end <= self.buf.len())
            .ok_or_else(|| {
                Malformed(format!(
                    "string or bytes of length {size} at byte {at} overrun the record"
                ))
            })?;
        let slice = &self.buf[self.pos..end];
        self.pos = end;
        Ok(slice)
    }

    fn text(&mut self) -> Read<&'a str> {
        let at = self.pos;
        std::str::from_utf8(self.slice()?)
            .map_err(|e| Malformed(format!("string at byte {at} is not UTF-8: {e}")))
    }

    /// An array or map block count; a negative count is followed by the block's byte size.
    fn count(&mut self) -> Read<u64> {
        let at = self.pos;
        let count = self.long()?;
        if count < 0 {
            self.long()?;
        }
        count
            .checked_abs()
            .map(|c| c as u64)
            .ok_or_else(|| Malformed(format!("block count at byte {at} is out of range")))
    }

    fn index(&mut self, size: usize, what: &str) -> Read<usize> {
        let at = self.pos;
        let index = self.long()?;
        usize::try_from(index)
            .ok()
            .filter(|&i| i < size)
            .ok_or_else(|| Malformed(format!("{what} {index} at byte {at} is out of range")))
    }
}

#[pyclass(frozen)]
struct Decoder {
    records: Vec<RecordProgram>,
    texts: Mutex<Texts>,
    assembly: Option<Assembly>,
}

/// How `decode_record` turns record 0 (the envelope) into one object: `class` called with
/// `arguments`, each made from the envelope's fields (whose union field gives its value
/// alone). Two of the fields' symbols and the value's class are looked up together in
/// `kinds` (a record's value type and intent, which only make sense as a pair).
struct Assembly {
    class: Py<PyAny>,
    arguments: Vec<Argument>,
    kind_fields: (usize, usize, usize),
    kinds: HashMap<(usize, usize, usize), [Py<PyAny>; 2]>,
    prefix: Vec<u8>,
    max_bytes: usize,
    /// What the tables' addresses belong to, held so that no address is reused.
    _keep: Vec<Py<PyAny>>,
}

enum Argument {
    /// The field as decoded.
    Field(usize),
    /// An enum field's symbol, replaced by its object (None stays None).
    Member(usize, HashMap<usize, Py<PyAny>>),
    /// The first or second object of the `kinds` lookup.
    Kind(usize),
    /// The position `decode_record` is given.
    Position,
}

fn parse_op(op: &Bound<'_, PyAny>) -> PyResult<Op> {
    let op = op.cast::<PyTuple>()?;
    let kind: String = op.get_item(0)?.extract()?;
    let arg = || op.get_item(1);
    Ok(match kind.as_str() {
        "long" => Op::Long,
        "string" => Op::Text,
        "bytes" => Op::Bytes,
        "boolean" => Op::Boolean,
        "null" => Op::Null,
        "enum" => Op::Enum(
            arg()?
                .try_iter()?
                .map(|s| s.map(Bound::unbind))
                .collect::<PyResult<_>>()?,
        ),
        "nullable" => Op::Nullable(Box::new(parse_op(&arg()?)?)),
        "union" => {
            let mut branches = Vec::new();
            for branch in arg()?.try_iter()? {
                let (name, index): (Bound<'_, PyAny>, usize) = branch?.extract()?;
                branches.push((name.unbind(), index));
            }
            Op::Union(branches)
        }
        "record" => Op::Record(arg()?.extract()?),
        "array" => Op::Array(Box::new(parse_op(&arg()?)?)),
        "map" => Op::Map(Box::new(parse_op(&arg()?)?)),
        other => {
            return Err(PyTypeError::new_err(format!(
                "unknown decoder op {other:?}"
            )))
        }
    })
}

impl Decoder {
    fn value(
        &self,
        py: Python<'_>,
        reader: &mut Reader<'_, '_>,
        op: &Op,
        depth: u32,
    ) -> Read<Py<PyAny>> {
        Ok(match op {
            Op::Long => {
                let Ok(number) = reader.long()?.into_pyobject(py);
                number.into_any().unbind()
            }
            Op::Text => {
                let text = reader.text()?;
                reader.texts.string(py, text)
            }
            Op::Bytes => PyBytes::new(py, reader.slice()?).into_any().unbind(),
            Op::Boolean => {
                let at = reader.pos;
                match reader.byte()? {
                    0 => PyBool::new(py, false).to_owned().into_any().unbind(),
                    1 => PyBool::new(py, true).to_owned().into_any().unbind(),
                    b => return Err(Malformed(format!("boolean byte {b} at byte {at}"))),
                }
            }
            Op::Null => py.None(),
            Op::Enum(symbols) => symbols[reader.index(symbols.len(), "enum index")?].clone_ref(py),
            Op::Nullable(inner) => match reader.index(2, "union branch")? {
                0 => py.None(),
                _ => self.value(py, reader, inner, depth)?,
            },
            Op::Union(branches) => {
                let (name, record) = &branches[reader.index(branches.len(), "union branch")?];
                let value = self.record(py, reader, *record, depth)?;
                PyTuple::new(py, [name.clone_ref(py), value])
                    .map_err(py_failure)?
                    .into_any()
                    .unbind()
            }
            Op::Record(index) => self.record(py, reader, *index, depth)?,
            Op::Array(item) => {
                let mut items = Vec::new();
                loop {
                    let count = reader.count()?;
                    if count == 0 {
                        break;
                    }
                    for _ in 0..count {
                        items.push(self.value(py, reader, item, depth)?);
                    }
                }
                PyTuple::new(py, items)
                    .map_err(py_failure)?
                    .into_any()
                    .unbind()
            }
            Op::Map(item) => {
                let map = PyDict::new(py);
                loop {
                    let count = reader.count()?;
                    if count == 0 {
                        break;
                    }
                    for _ in 0..count {
                        let text = reader.text()?;
                        let key = reader.texts.string(py, text);
                        let value = self.value(py, reader, item, depth)?;
                        map.set_item(key, value).map_err(py_failure)?;
                    }
                }
                map.into_any().unbind()
            }
        })
    }

    fn record(
        &self,
        py: Python<'_>,
        reader: &mut Reader<'_, '_>,
        index: usize,
        depth: u32,
    ) -> Read<Py<PyAny>> {
        if depth >= MAX_DEPTH {
            return Err(Malformed(format!(
                "records nested deeper than {MAX_DEPTH} at byte {}",
                reader.pos
            )));
        }
        let depth = depth + 1;
        let program = &self.records[index];
        let mut fields = Vec::with_capacity(program.fields.len());
        for op in &program.fields {
            fields.push(self.value(py, reader, op, depth)?);
        }
        match &program.class {
            None => Ok(PyTuple::new(py, fields)
                .map_err(py_failure)?
                .into_any()
                .unbind()),
            Some(class) => call(py, class, &fields).map_err(py_failure),
        }
    }
}

/// A Python error while building a value (memory, a class refusing its fields): reported as
/// malformed input with the error's text, which is what the pure-Python decoder does too.
fn py_failure(error: PyErr) -> Malformed {
    Malformed(error.to_string())
}

#[pymethods]
impl Decoder {
    #[new]
    #[pyo3(signature = (program, assembly=None))]
    fn new(program: &Bound<'_, PyAny>, assembly: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let mut records = Vec::new();
        for entry in program.try_iter()? {
            let entry = entry?;
            let entry = entry.cast::<PyTuple>()?;
            let class = entry.get_item(0)?;
            let class = if class.is_none() {
                None
            } else {
                Some(class.unbind())
            };
            let fields = entry
                .get_item(1)?
                .try_iter()?
                .map(|op| parse_op(&op?))
                .collect::<PyResult<_>>()?;
            records.push(RecordProgram { class, fields });
        }
        let mut decoder = Decoder {
            records,
            texts: Mutex::new(Texts::new()),
            assembly: None,
        };
        decoder.check()?;
        if let Some(assembly) = assembly {
            decoder.assembly = Some(decoder.parse_assembly(assembly)?);
        }
        Ok(decoder)
    }

    /// The object `assembly` makes of the record in `data` (the prefix, then record 0 ending
    /// where `data` ends), with `position`; None when `data` is anything else (no prefix, too
    /// long, malformed, a pair of symbols and class the lookup lacks): the caller's checked
    /// path says what is wrong.
    fn decode_record(
        &self,
        py: Python<'_>,
        data: &[u8],
        position: i64,
    ) -> PyResult<Option<Py<PyAny>>> {
        self.decode_record_with(py, data, position, &[])
    }

    /// Decode record 0 of the program from `buf` at `pos`: `(fields, end)`.
    fn decode(&self, py: Python<'_>, buf: &[u8], pos: usize) -> PyResult<(Py<PyAny>, usize)> {
        if self.records.is_empty() {
            return Err(PyValueError::new_err("the decoder has no records"));
        }
        let mut texts = self
            .texts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut reader = Reader {
            buf,
            pos,
            texts: &mut texts,
        };
        match self.record(py, &mut reader, 0, 0) {
            Ok(value) => Ok((value, reader.pos)),
            Err(Malformed(message)) => Err(PyValueError::new_err(message)),
        }
    }
}

impl Decoder {
    /// `decode_record`, with the class's arguments at the indexes of `overrides` replaced by
    /// their values (the record as `msgspec.structs.replace` would give it).
    fn decode_record_with(
        &self,
        py: Python<'_>,
        data: &[u8],
        position: i64,
        overrides: &[(usize, Py<PyAny>)],
    ) -> PyResult<Option<Py<PyAny>>> {
        let Some(assembly) = &self.assembly else {
            return Err(PyValueError::new_err(
                "this decoder was built without an assembly",
            ));
        };
        if data.len() > assembly.max_bytes || !data.starts_with(&assembly.prefix) {
            return Ok(None);
        }
        let mut texts = self
            .texts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut reader = Reader {
            buf: data,
            pos: assembly.prefix.len(),
            texts: &mut texts,
        };
        let Ok(fields) = self.envelope(py, &mut reader) else {
            return Ok(None);
        };
        if reader.pos != data.len() {
            return Ok(None);
        }
        let (value_type, intent, value) = assembly.kind_fields;
        let key = (
            fields[value_type].as_ptr() as usize,
            fields[intent].as_ptr() as usize,
            // SAFETY: a live object's type, compared by address only
            unsafe { ffi::Py_TYPE(fields[value].as_ptr()) } as usize,
        );
        let Some(kinds) = assembly.kinds.get(&key) else {
            return Ok(None);
        };
        let mut arguments: Vec<Py<PyAny>> = Vec::with_capacity(assembly.arguments.len());
        for argument in &assembly.arguments {
            arguments.push(match argument {
                Argument::Field(index) => fields[*index].clone_ref(py),
                Argument::Member(index, members) => {
                    let field = &fields[*index];
                    if field.is_none(py) {
                        py.None()
                    } else {
                        match members.get(&(field.as_ptr() as usize)) {
                            Some(member) => member.clone_ref(py),
                            None => return Ok(None),
                        }
                    }
                }
                Argument::Kind(which) => kinds[*which].clone_ref(py),
                Argument::Position => {
                    let Ok(number) = position.into_pyobject(py);
                    number.into_any().unbind()
                }
            });
        }
        for (index, value) in overrides {
            if let Some(argument) = arguments.get_mut(*index) {
                *argument = value.clone_ref(py);
            }
        }
        call(py, &assembly.class, &arguments).map(Some)
    }
}

/// `class(*arguments)` by vectorcall, without a tuple to hold the arguments.
fn call(py: Python<'_>, class: &Py<PyAny>, arguments: &[Py<PyAny>]) -> PyResult<Py<PyAny>> {
    let pointers: Vec<*mut ffi::PyObject> = arguments.iter().map(Py::as_ptr).collect();
    // SAFETY: `pointers` are live references, kept by `arguments` for the call; the result
    // is a new reference, or NULL with an exception set.
    unsafe {
        let made = ffi::PyObject_Vectorcall(
            class.as_ptr(),
            pointers.as_ptr(),
            pointers.len(),
            std::ptr::null_mut(),
        );
        Bound::from_owned_ptr_or_err(py, made).map(Bound::unbind)
    }
}

impl Decoder {
    /// Record 0's fields, its union fields as their value alone (the branch's class says it).
    fn envelope(&self, py: Python<'_>, reader: &mut Reader<'_, '_>) -> Read<Vec<Py<PyAny>>> {
        let program = &self.records[0];
        let mut fields = Vec::with_capacity(program.fields.len());
        for op in &program.fields {
            fields.push(match op {
                Op::Union(branches) => {
                    let (_, record) = &branches[reader.index(branches.len(), "union branch")?];
                    self.record(py, reader, *record, 1)?
                }
                _ => self.value(py, reader, op, 1)?,
            });
        }
        Ok(fields)
    }

    /// The address of `symbol` among the symbols of record 0's enum field `index`; None when
    /// the field has no such symbol (a member an older schema lacks: it cannot occur).
    fn symbol(&self, index: usize, symbol: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
        let symbols = match self.records[0].fields.get(index) {
            Some(Op::Enum(symbols)) => symbols,
            Some(Op::Nullable(inner)) => match inner.as_ref() {
                Op::Enum(symbols) => symbols,
                _ => {
                    return Err(PyValueError::new_err(format!(
                        "field {index} is not an enum"
                    )))
                }
            },
            _ => {
                return Err(PyValueError::new_err(format!(
                    "field {index} is not an enum"
                )))
            }
        };
        for known in symbols {
            if known.bind(symbol.py()).eq(symbol)? {
                return Ok(Some(known.as_ptr() as usize));
            }
        }
        Ok(None)
    }

    /// `(class, arguments, (value type field, intent field, value field), kinds, prefix, max
    /// bytes)`, arguments being `("field", i)`, `("member", i, {symbol: object})`, `("kind",
    /// 0 or 1)` or `("position",)`, kinds `{(symbol, symbol, class): (object, object)}`.
    fn parse_assembly(&self, assembly: &Bound<'_, PyAny>) -> PyResult<Assembly> {
        if self.records.is_empty() {
            return Err(PyValueError::new_err("the decoder has no records"));
        }
        let (class, recipe, kind_fields, table, prefix, max_bytes): (
            Bound<'_, PyAny>,
            Bound<'_, PyAny>,
            (usize, usize, usize),
            Bound<'_, PyDict>,
            Vec<u8>,
            usize,
        ) = assembly.extract()?;
        let count = self.records[0].fields.len();
        let field = |index: usize| {
            if index < count {
                Ok(index)
            } else {
                Err(PyValueError::new_err(format!(
                    "record 0 has no field {index}"
                )))
            }
        };
        field(kind_fields.0)?;
        field(kind_fields.1)?;
        field(kind_fields.2)?;
        let mut keep = Vec::new();
        let mut arguments = Vec::new();
        for item in recipe.try_iter()? {
            let item = item?;
            let item = item.cast::<PyTuple>()?;
            let kind: String = item.get_item(0)?.extract()?;
            arguments.push(match kind.as_str() {
                "field" => Argument::Field(field(item.get_item(1)?.extract()?)?),
                "member" => {
                    let index = field(item.get_item(1)?.extract()?)?;
                    let mut members = HashMap::default();
                    for (symbol, member) in item.get_item(2)?.cast::<PyDict>()?.iter() {
                        if let Some(address) = self.symbol(index, &symbol)? {
                            members.insert(address, member.unbind());
                        }
                    }
                    Argument::Member(index, members)
                }
                "kind" => Argument::Kind(match item.get_item(1)?.extract()? {
                    which @ (0 | 1) => which,
                    other => {
                        return Err(PyValueError::new_err(format!("no kind {other}")));
                    }
                }),
                "position" => Argument::Position,
                other => {
                    return Err(PyTypeError::new_err(format!(
                        "unknown assembly argument {other:?}"
                    )))
                }
            });
        }
        let mut kinds = HashMap::default();
        for (key, pair) in table.iter() {
            let (value_type, intent, value_class): (
                Bound<'_, PyAny>,
                Bound<'_, PyAny>,
                Bound<'_, PyAny>,
            ) = key.extract()?;
            let (first, second): (Bound<'_, PyAny>, Bound<'_, PyAny>) = pair.extract()?;
            let (Some(value_type), Some(intent)) = (
                self.symbol(kind_fields.0, &value_type)?,
                self.symbol(kind_fields.1, &intent)?,
            ) else {
                continue; // a pair an older schema cannot write
            };
            kinds.insert(
                (value_type, intent, value_class.as_ptr() as usize),
                [first.unbind(), second.unbind()],
            );
            keep.push(value_class.unbind());
        }
        Ok(Assembly {
            class: class.unbind(),
            arguments,
            kind_fields,
            kinds,
            prefix,
            max_bytes,
            _keep: keep,
        })
    }

    /// Every record index the program names exists.
    fn check(&self) -> PyResult<()> {
        fn walk(op: &Op, count: usize) -> bool {
            match op {
                Op::Record(index) => *index < count,
                Op::Union(branches) => branches.iter().all(|(_, index)| *index < count),
                Op::Nullable(inner) | Op::Array(inner) | Op::Map(inner) => walk(inner, count),
                _ => true,
            }
        }
        let count = self.records.len();
        if self
            .records
            .iter()
            .all(|record| record.fields.iter().all(|op| walk(op, count)))
        {
            Ok(())
        } else {
            Err(PyValueError::new_err(
                "the program names a record it does not define",
            ))
        }
    }
}

#[pymodule]
fn partita_native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Decoder>()?;
    module.add_class::<Encoder>()?;
    module.add_class::<Admitter>()?;
    Ok(())
}

// -- encoding ---------------------------------------------------------------------------------

/// An encoder op. Enum members and union classes are looked up by identity, never through
/// Python's `__hash__`: the maps are keyed by their addresses, and the op holds a reference
/// to each (the `Vec`s, never read) so that no address can be reused while the op lives.
#[allow(dead_code)]
enum EncodeOp {
    Long,
    Int,
    Text,
    Bytes,
    Boolean,
    Null,
    Enum(HashMap<usize, i64>, Vec<Py<PyAny>>),
    Nullable(Box<EncodeOp>),
    Union(HashMap<usize, (i64, usize)>, Vec<Py<PyAny>>),
    Record(usize),
    Array(Box<EncodeOp>),
    Map(Box<EncodeOp>),
}

struct EncodeRecord {
    attributes: Vec<Py<PyString>>,
    ops: Vec<EncodeOp>,
    slots: Option<Slots>,
}

/// Where an exact class keeps the record's attributes: the offsets of its `__slots__` members
/// (msgspec structs keep every field in one), read straight from an instance of exactly that
/// class instead of through `getattr`, which looks each name up in the type first.
struct Slots {
    class: Py<PyAny>,
    offsets: Vec<ffi::Py_ssize_t>,
}

impl Slots {
    /// The slot offsets of `attributes` in `class`, or None when one of them is not a plain
    /// object slot (a property, a method, a class attribute): those are read through `getattr`.
    fn of(class: &Bound<'_, PyAny>, attributes: &[Py<PyString>]) -> PyResult<Option<Self>> {
        let py = class.py();
        if !class.is_instance_of::<PyType>() {
            return Ok(None);
        }
        let mut offsets = Vec::with_capacity(attributes.len());
        for attribute in attributes {
            let Ok(descriptor) = class.getattr(attribute.bind(py)) else {
                return Ok(None);
            };
            // SAFETY: the type check makes the cast to a member descriptor valid; a member
            // descriptor's `d_member` points at its class's static member table.
            let offset = unsafe {
                let raw = descriptor.as_ptr();
                if ffi::Py_TYPE(raw) != std::ptr::addr_of_mut!(ffi::PyMemberDescr_Type) {
                    return Ok(None);
                }
                let member = (*(raw as *mut ffi::PyMemberDescrObject)).d_member;
                if member.is_null() || (*member).type_code != ffi::Py_T_OBJECT_EX {
                    return Ok(None);
                }
                (*member).offset
            };
            offsets.push(offset);
        }
        Ok(Some(Slots {
            class: class.clone().unbind(),
            offsets,
        }))
    }
}

/// An Avro binary encoder of Python objects, interpreting a program compiled from the schema
/// (`engine/protocol/native.py`): one entry per record, `(attribute names, ops, class or
/// None)`, where the ops are those of `Decoder` plus `("int",)` (32 bits), with `("enum",
/// {member: index})` and `("union", {class: (branch, record index)})`. An instance of exactly
/// the entry's class has its attributes read from their slots (`Slots`), anything else through
/// `getattr`. Output equals the pure-Python encoder's.
#[pyclass(frozen)]
struct Encoder {
    records: Vec<EncodeRecord>,
    prefix: Vec<u8>,
    /// For `encode_all`: what each record must agree with before it is written (`Kinds`).
    kinds: Option<Kinds>,
    /// For `encode_all`: the largest encoding it returns (0: any size).
    max_bytes: usize,
    /// For `produce_all`: the headers of each kind of record.
    headers: HeaderCache,
    /// For `produce_all`: the envelope's attributes it reads.
    names: [Py<PyString>; 3],
}

/// The agreement `encode_all` checks on each record before it writes it: its intent (by
/// address) names the only value type and value class it may go with. The attributes are
/// those of the program's first record (the envelope).
struct Kinds {
    by_intent: HashMap<usize, (usize, usize)>,
    _keep: Vec<Py<PyAny>>,
    value_type: Py<PyString>,
    intent: Py<PyString>,
    value: Py<PyString>,
}

impl Kinds {
    fn of(table: &Bound<'_, PyDict>) -> PyResult<Self> {
        let py = table.py();
        let mut by_intent = HashMap::default();
        let mut keep = Vec::new();
        for (intent, pair) in table.iter() {
            let pair = pair.cast::<PyTuple>()?;
            let (value_type, class) = (pair.get_item(0)?, pair.get_item(1)?);
            by_intent.insert(
                intent.as_ptr() as usize,
                (value_type.as_ptr() as usize, class.as_ptr() as usize),
            );
            keep.extend([intent.unbind(), value_type.unbind(), class.unbind()]);
        }
        Ok(Kinds {
            by_intent,
            _keep: keep,
            value_type: PyString::intern(py, "value_type").unbind(),
            intent: PyString::intern(py, "intent").unbind(),
            value: PyString::intern(py, "value").unbind(),
        })
    }

    /// Whether `record`'s value type, intent and value class go together.
    fn agree(&self, record: &Bound<'_, PyAny>) -> PyResult<bool> {
        let py = record.py();
        let intent = record.getattr(self.intent.bind(py))?;
        let Some(&(value_type, class)) = self.by_intent.get(&(intent.as_ptr() as usize)) else {
            return Ok(false);
        };
        let value = record.getattr(self.value.bind(py))?;
        Ok(value.get_type().as_ptr() as usize == class
            && record.getattr(self.value_type.bind(py))?.as_ptr() as usize == value_type)
    }
}

fn parse_encode_op(op: &Bound<'_, PyAny>) -> PyResult<EncodeOp> {
    let op = op.cast::<PyTuple>()?;
    let kind: String = op.get_item(0)?.extract()?;
    let arg = || op.get_item(1);
    Ok(match kind.as_str() {
        "long" => EncodeOp::Long,
        "int" => EncodeOp::Int,
        "string" => EncodeOp::Text,
        "bytes" => EncodeOp::Bytes,
        "boolean" => EncodeOp::Boolean,
        "null" => EncodeOp::Null,
        "enum" => {
            let table = arg()?;
            let table = table.cast::<PyDict>()?;
            let mut index = HashMap::default();
            let mut keep = Vec::new();
            for (member, symbol) in table.iter() {
                index.insert(member.as_ptr() as usize, symbol.extract::<i64>()?);
                keep.push(member.unbind());
            }
            EncodeOp::Enum(index, keep)
        }
        "nullable" => EncodeOp::Nullable(Box::new(parse_encode_op(&arg()?)?)),
        "union" => {
            let table = arg()?;
            let table = table.cast::<PyDict>()?;
            let mut index = HashMap::default();
            let mut keep = Vec::new();
            for (class, branch) in table.iter() {
                index.insert(class.as_ptr() as usize, branch.extract::<(i64, usize)>()?);
                keep.push(class.unbind());
            }
            EncodeOp::Union(index, keep)
        }
        "record" => EncodeOp::Record(arg()?.extract()?),
        "array" => EncodeOp::Array(Box::new(parse_encode_op(&arg()?)?)),
        "map" => EncodeOp::Map(Box::new(parse_encode_op(&arg()?)?)),
        other => {
            return Err(PyTypeError::new_err(format!(
                "unknown encoder op {other:?}"
            )))
        }
    })
}

#[inline(always)]
fn write_long(out: &mut Vec<u8>, value: i64) {
    let mut n = ((value << 1) ^ (value >> 63)) as u64;
    while n > 0x7F {
        out.push((n as u8 & 0x7F) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn write_len(out: &mut Vec<u8>, len: usize) {
    write_long(out, len as i64);
}

impl Encoder {
    fn value(
        &self,
        out: &mut Vec<u8>,
        value: &Bound<'_, PyAny>,
        op: &EncodeOp,
        depth: u32,
    ) -> PyResult<()> {
        match op {
            EncodeOp::Long => write_long(
                out,
                value
                    .extract::<i64>()
                    .map_err(|_| out_of_range(value, 64))?,
            ),
            EncodeOp::Int => {
                let number = value
                    .extract::<i64>()
                    .map_err(|_| out_of_range(value, 32))?;
                if i32::try_from(number).is_err() {
                    return Err(PyOverflowError::new_err(format!(
                        "{number} does not fit an Avro int (32-bit)"
                    )));
                }
                write_long(out, number);
            }
            EncodeOp::Text => {
                let text = value.cast::<PyString>()?.to_str()?;
                write_len(out, text.len());
                out.extend_from_slice(text.as_bytes());
            }
            EncodeOp::Bytes => {
                let data = value.cast::<PyBytes>()?.as_bytes();
                write_len(out, data.len());
                out.extend_from_slice(data);
            }
            EncodeOp::Boolean => out.push(u8::from(value.is_truthy()?)),
            EncodeOp::Null => {}
            EncodeOp::Enum(index, _) => match index.get(&(value.as_ptr() as usize)) {
                Some(&symbol) => write_long(out, symbol),
                None => {
                    return Err(PyKeyError::new_err(format!(
                        "{} is not a symbol of this enum",
                        value.repr()?
                    )))
                }
            },
            EncodeOp::Nullable(inner) => {
                if value.is_none() {
                    out.push(0);
                } else {
                    out.push(2);
                    self.value(out, value, inner, depth)?;
                }
            }
            EncodeOp::Union(index, _) => match index.get(&(value.get_type().as_ptr() as usize)) {
                Some(&(branch, record)) => {
                    write_long(out, branch);
                    self.record(out, value, record, depth)?;
                }
                None => {
                    let name = value.get_type().name()?;
                    return Err(PyKeyError::new_err(format!(
                        "{name} is not a branch of this union"
                    )));
                }
            },
            EncodeOp::Record(record) => self.record(out, value, *record, depth)?,
            // an empty or false value is the empty array or map, as the pure-Python encoder has it
            EncodeOp::Array(item) => {
                let count = if value.is_truthy()? { value.len()? } else { 0 };
                if count > 0 {
                    write_len(out, count);
                    let mut written = 0usize;
                    for element in value.try_iter()? {
                        self.value(out, &element?, item, depth)?;
                        written += 1;
                    }
                    if written != count {
                        return Err(PyValueError::new_err(
                            "the array changed while it was encoded",
                        ));
                    }
                }
                out.push(0);
            }
            EncodeOp::Map(item) => {
                if value.is_truthy()? {
                    let map = value.cast::<PyDict>()?;
                    write_len(out, map.len());
                    for (key, element) in map.iter() {
                        let key = key.cast::<PyString>()?.to_str()?;
                        write_len(out, key.len());
                        out.extend_from_slice(key.as_bytes());
                        self.value(out, &element, item, depth)?;
                    }
                }
                out.push(0);
            }
        }
        Ok(())
    }

    fn record(
        &self,
        out: &mut Vec<u8>,
        value: &Bound<'_, PyAny>,
        index: usize,
        depth: u32,
    ) -> PyResult<()> {
        if depth >= MAX_DEPTH {
            return Err(PyValueError::new_err(format!(
                "records nested deeper than {MAX_DEPTH}"
            )));
        }
        let record = &self.records[index];
        let py = value.py();
        if let Some(slots) = &record.slots {
            // SAFETY: `value` is a live object; its type is only compared, not used
            if unsafe { ffi::Py_TYPE(value.as_ptr()) }.cast() == slots.class.as_ptr() {
                for ((offset, attribute), op) in slots
                    .offsets
                    .iter()
                    .zip(&record.attributes)
                    .zip(&record.ops)
                {
                    // SAFETY: `value` is exactly the class whose member table gave `offset`,
                    // so the slot is an object pointer inside the instance (NULL when unset).
                    let field = unsafe {
                        let raw = *((value.as_ptr() as *const u8).offset(*offset)
                            as *const *mut ffi::PyObject);
                        Bound::from_borrowed_ptr_or_opt(py, raw)
                    };
                    match field {
                        Some(field) => self.value(out, &field, op, depth + 1)?,
                        // an unset slot: getattr raises the AttributeError that says which
                        None => {
                            self.value(out, &value.getattr(attribute.bind(py))?, op, depth + 1)?
                        }
                    }
                }
                return Ok(());
            }
        }
        for (attribute, op) in record.attributes.iter().zip(&record.ops) {
            self.value(out, &value.getattr(attribute.bind(py))?, op, depth + 1)?;
        }
        Ok(())
    }
}

fn out_of_range(value: &Bound<'_, PyAny>, bits: u32) -> PyErr {
    if value.is_instance_of::<pyo3::types::PyInt>() {
        PyOverflowError::new_err(format!(
            "{value} does not fit an Avro {} ({bits}-bit)",
            if bits == 32 { "int" } else { "long" }
        ))
    } else {
        let name = value
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        PyTypeError::new_err(format!("an integer is required, not {name}"))
    }
}

#[pymethods]
impl Encoder {
    #[new]
    #[pyo3(signature = (program, prefix, kinds=None, max_bytes=0))]
    fn new(
        program: &Bound<'_, PyAny>,
        prefix: &[u8],
        kinds: Option<&Bound<'_, PyDict>>,
        max_bytes: usize,
    ) -> PyResult<Self> {
        let mut records = Vec::new();
        for entry in program.try_iter()? {
            let entry = entry?;
            let entry = entry.cast::<PyTuple>()?;
            let attributes = entry
                .get_item(0)?
                .try_iter()?
                .map(|name| Ok(name?.cast_into::<PyString>()?.unbind()))
                .collect::<PyResult<Vec<_>>>()?;
            let ops = entry
                .get_item(1)?
                .try_iter()?
                .map(|op| parse_encode_op(&op?))
                .collect::<PyResult<Vec<_>>>()?;
            if attributes.len() != ops.len() {
                return Err(PyValueError::new_err(
                    "a record of the program has as many attributes as ops",
                ));
            }
            let slots = match entry.len() {
                3 if !entry.get_item(2)?.is_none() => Slots::of(&entry.get_item(2)?, &attributes)?,
                _ => None,
            };
            records.push(EncodeRecord {
                attributes,
                ops,
                slots,
            });
        }
        fn walk(op: &EncodeOp, count: usize) -> bool {
            match op {
                EncodeOp::Record(index) => *index < count,
                EncodeOp::Union(branches, _) => branches.values().all(|(_, index)| *index < count),
                EncodeOp::Nullable(inner) | EncodeOp::Array(inner) | EncodeOp::Map(inner) => {
                    walk(inner, count)
                }
                _ => true,
            }
        }
        let count = records.len();
        if count == 0
            || !records
                .iter()
                .all(|r| r.ops.iter().all(|op| walk(op, count)))
        {
            return Err(PyValueError::new_err(
                "the program names a record it does not define",
            ));
        }
        Ok(Encoder {
            records,
            prefix: prefix.to_vec(),
            kinds: kinds.map(Kinds::of).transpose()?,
            max_bytes,
            headers: HeaderCache::default(),
            names: ["record_type", "intent", "key"]
                .map(|n| PyString::intern(program.py(), n).unbind()),
        })
    }

    /// The prefix, then the Avro binary encoding of `value` as record 0 of the program.
    fn encode<'py>(&self, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(&self.prefix);
        self.record(&mut out, value, 0, 0)?;
        Ok(PyBytes::new(value.py(), &out))
    }

    /// `encode` of each record of the list `records`, in one call: each must agree with the
    /// `kinds` given (value type, intent, value class) and encode to at most `max_bytes`.
    /// Raises ValueError naming the first that does not (the caller's per-record path says
    /// why), or what `encode` raises.
    fn encode_all<'py>(&self, records: &Bound<'py, PyList>) -> PyResult<Bound<'py, PyList>> {
        let encoded = self.encode_each(records.iter())?;
        PyList::new(records.py(), encoded)
    }

    /// Encode the records of `pairs[start..end]` ((partition, record) pairs) as `encode_all`
    /// does, raising as it does before anything is produced, then produce each in order:
    /// `produce(topic, value, key, partition, on_delivery, None, timestamp, headers)`, where
    /// `headers` is `headers_of(record)` (called once per record type and intent: the result
    /// is kept), `key` the 8 big-endian bytes of a `command`'s positive key (None for other
    /// records and keys), and `on_delivery` None but for the `specials`: `(index,
    /// on_delivery, headers or None)` in index order, which also replace the headers. Returns
    /// how many records went to partition `own`, and whether one of them is a `command`.
    #[pyo3(signature = (produce, topic, pairs, start, end, own, headers_of, command, timestamp, specials))]
    #[allow(clippy::too_many_arguments)]
    fn produce_all(
        &self,
        produce: &Bound<'_, PyAny>,
        topic: &Bound<'_, PyAny>,
        pairs: &Bound<'_, PyList>,
        start: usize,
        end: usize,
        own: i64,
        headers_of: &Bound<'_, PyAny>,
        command: &Bound<'_, PyAny>,
        timestamp: &Bound<'_, PyAny>,
        specials: &Bound<'_, PyList>,
    ) -> PyResult<(usize, bool)> {
        let py = pairs.py();
        let end = end.min(pairs.len());
        let mut entries = Vec::with_capacity(end.saturating_sub(start));
        for index in start..end {
            let pair = pairs.get_item(index)?;
            let pair = pair.cast::<PyTuple>()?;
            entries.push((pair.get_item(0)?, pair.get_item(1)?));
        }
        let values = self.encode_each(entries.iter().map(|(_, record)| record.clone()))?;
        let [record_type_name, intent_name, key_name] = &self.names;
        let none = py.None().into_bound(py);
        let mut specials = specials.iter().peekable();
        let (mut written, mut command_left) = (0usize, false);
        for (offset, ((partition, record), value)) in entries.iter().zip(values).enumerate() {
            let record_type = record.getattr(record_type_name.bind(py))?;
            let is_command = record_type.is(command);
            let intent = record.getattr(intent_name.bind(py))?;
            let mut headers = self
                .headers
                .get(record, &record_type, &intent, headers_of)?;
            let mut on_delivery = none.clone();
            if let Some(special) = specials.peek() {
                let special = special.cast::<PyTuple>()?;
                if special.get_item(0)?.extract::<usize>()? == start + offset {
                    on_delivery = special.get_item(1)?;
                    let replaced = special.get_item(2)?;
                    if !replaced.is_none() {
                        headers = replaced;
                    }
                    specials.next();
                }
            }
            let mut key = none.clone();
            if is_command {
                let number: i64 = record.getattr(key_name.bind(py))?.extract()?;
                if number > 0 {
                    key = PyBytes::new(py, &number.to_be_bytes()).into_any();
                }
            }
            if partition.extract::<i64>()? == own {
                written += 1;
                command_left |= is_command;
            }
            produce.call1((
                topic,
                value,
                key,
                partition,
                on_delivery,
                none.clone(),
                timestamp,
                headers,
            ))?;
        }
        Ok((written, command_left))
    }
}

impl Encoder {
    /// The encodings of `records`, each checked as `encode_all` says.
    fn encode_each<'py>(
        &self,
        records: impl Iterator<Item = Bound<'py, PyAny>>,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let mut encoded = Vec::new();
        let mut out = Vec::with_capacity(256);
        for (index, record) in records.enumerate() {
            let py = record.py();
            if let Some(kinds) = &self.kinds {
                if !kinds.agree(&record)? {
                    return Err(PyValueError::new_err(format!(
                        "record {index}: its value type, intent and value do not go together"
                    )));
                }
            }
            out.clear();
            out.extend_from_slice(&self.prefix);
            self.record(&mut out, &record, 0, 0)?;
            if self.max_bytes > 0 && out.len() > self.max_bytes {
                return Err(PyValueError::new_err(format!(
                    "record {index} is {} bytes, over the limit of {}",
                    out.len(),
                    self.max_bytes
                )));
            }
            encoded.push(PyBytes::new(py, &out));
        }
        Ok(encoded)
    }
}

/// The common case of admitting client commands (`engine.stream.ingress`), compiled: a record
/// of the ingress topic that declares no record type but COMMAND, decodes with the current
/// schema, is a COMMAND of an intent clients may send, names no key, is routed to this
/// partition and re-encodes within the limit becomes a `Copy` for the log, normalised as the
/// Python path normalises it. Anything else stops the loop at that record, whose verdict the
/// Python path gives (it refuses, forwards or copies it, saying why): that path stays the one
/// that decides; this one only takes the records it would copy unchanged, as the parity fuzz
/// test checks.
#[pyclass(frozen)]
struct Admitter {
    decoder: Py<Decoder>,
    encoder: Py<Encoder>,
    command: Py<PyAny>,
    intents: HashSet<usize>,
    _keep: Vec<Py<PyAny>>,
    no_key_check: Py<PyAny>,
    own: i64,
    route: Option<Py<PyAny>>,
    /// The indexes of the record class's partition_id, timestamp, source_record_position,
    /// rejection_type and rejection_reason arguments: what normalising a copy replaces.
    normalised: [usize; 5],
    copy: Py<PyAny>,
    reply_to: Py<PyAny>,
    headers_of: Py<PyAny>,
    headers: HeaderCache,
    names: AdmitterNames,
}

struct AdmitterNames {
    offset: Py<PyString>,
    headers: Py<PyString>,
    value: Py<PyString>,
    record_type: Py<PyString>,
    intent: Py<PyString>,
    value_type: Py<PyString>,
    key: Py<PyString>,
    declared: Py<PyString>,
    reply_topic: Py<PyString>,
    ingress_offset: Py<PyString>,
}

#[pymethods]
impl Admitter {
    /// `intents`: those clients may send; `no_key_check`: the value type whose scope key
    /// admission checks (always left to Python); `route(record)` names a command's partition
    /// (None: the log has one partition, `own`, where every command goes);
    /// `normalised`: the record class's arguments a copy replaces (see the field);
    /// `copy(record, value, headers, reply)` builds a copy;
    /// `reply_to(headers)` and `headers_of(record)` as in `engine.protocol.headers`.
    #[new]
    #[pyo3(signature = (decoder, encoder, command, intents, no_key_check, own, route, normalised, copy, reply_to, headers_of, ingress_offset))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        decoder: Py<Decoder>,
        encoder: Py<Encoder>,
        command: Py<PyAny>,
        intents: &Bound<'_, PyAny>,
        no_key_check: Py<PyAny>,
        own: i64,
        route: Option<Py<PyAny>>,
        normalised: [usize; 5],
        copy: Py<PyAny>,
        reply_to: Py<PyAny>,
        headers_of: Py<PyAny>,
        ingress_offset: &str,
    ) -> PyResult<Self> {
        let py = intents.py();
        if decoder.get().assembly.is_none() {
            return Err(PyValueError::new_err(
                "the decoder was built without an assembly",
            ));
        }
        let mut table = HashSet::default();
        let mut keep = Vec::new();
        for intent in intents.try_iter()? {
            let intent = intent?;
            table.insert(intent.as_ptr() as usize);
            keep.push(intent.unbind());
        }
        let name = |n: &str| PyString::intern(py, n).unbind();
        Ok(Admitter {
            decoder,
            encoder,
            command,
            intents: table,
            _keep: keep,
            no_key_check,
            own,
            route,
            normalised,
            copy,
            reply_to,
            headers_of,
            headers: HeaderCache::default(),
            names: AdmitterNames {
                offset: name("offset"),
                headers: name("headers"),
                value: name("value"),
                record_type: name("record_type"),
                intent: name("intent"),
                value_type: name("value_type"),
                key: name("key"),
                declared: name("recordType"),
                reply_topic: name("kafka_replyTopic"),
                ingress_offset: name(ingress_offset),
            },
        })
    }

    /// Take `messages[start..]` in order while each is the common case: those at offsets
    /// from `first` on become copies appended to `copies`, the first at log position
    /// `position + len(copies)`, each with timestamp `now`; those before `first` are passed
    /// over. Returns the index of the first message the Python path must decide (or the
    /// list's length) and how many messages from `first` on it took.
    #[pyo3(signature = (messages, start, first, now, position, copies))]
    fn take(
        &self,
        messages: &Bound<'_, PyList>,
        start: usize,
        first: i64,
        now: i64,
        position: i64,
        copies: &Bound<'_, PyList>,
    ) -> PyResult<(usize, usize)> {
        let py = messages.py();
        let [partition_id, timestamp, source, rejection_type, reason] = self.normalised;
        let changes = vec![
            (
                partition_id,
                (self.own + 1).into_pyobject(py)?.into_any().unbind(),
            ),
            (timestamp, now.into_pyobject(py)?.into_any().unbind()),
            (source, (-1i64).into_pyobject(py)?.into_any().unbind()),
            (rejection_type, py.None()),
            (reason, PyString::new(py, "").into_any().unbind()),
        ];
        let mut taken = 0;
        for index in start..messages.len() {
            let message = messages.get_item(index)?;
            let offset: i64 = message
                .call_method0(self.names.offset.bind(message.py()))?
                .extract()?;
            if offset < first {
                continue;
            }
            let place = position + copies.len() as i64;
            let Some(copy) = self.copy_of(&message, offset, place, &changes)? else {
                return Ok((index, taken));
            };
            copies.append(copy)?;
            taken += 1;
        }
        Ok((messages.len(), taken))
    }
}

impl Admitter {
    /// The copy of the ingress record `message` at `offset`, or None for the Python path:
    /// decoded with the arguments `changes` names (the copy's normalised fields), at log
    /// `position`.
    fn copy_of<'py>(
        &self,
        message: &Bound<'py, PyAny>,
        offset: i64,
        position: i64,
        changes: &[(usize, Py<PyAny>)],
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = message.py();
        let names = &self.names;
        let headers = message.call_method0(names.headers.bind(py))?;
        let mut replied = false;
        if !headers.is_none() {
            let Ok(list) = headers.cast::<PyList>() else {
                return Ok(None);
            };
            let mut declared = false;
            for item in list.iter() {
                let Ok(pair) = item.cast::<PyTuple>() else {
                    return Ok(None);
                };
                if pair.len() != 2 {
                    return Ok(None);
                }
                let name = pair.get_item(0)?;
                let Ok(name) = name.cast::<PyString>() else {
                    return Ok(None);
                };
                if name.as_any().eq(names.declared.bind(py))? {
                    if !declared {
                        declared = true;
                        let value = pair.get_item(1)?;
                        if !value.is_none() {
                            let Ok(bytes) = value.cast::<PyBytes>() else {
                                return Ok(None);
                            };
                            if bytes.as_bytes() != b"COMMAND" {
                                return Ok(None);
                            }
                        }
                    }
                } else if name.as_any().eq(names.reply_topic.bind(py))? {
                    replied = true;
                }
            }
        }
        let value = message.call_method0(names.value.bind(py))?;
        let Ok(value) = value.cast::<PyBytes>() else {
            return Ok(None);
        };
        let decoder = self.decoder.get();
        let Some(record) = decoder.decode_record_with(py, value.as_bytes(), position, changes)?
        else {
            return Ok(None);
        };
        let record = record.into_bound(py);
        let record_type = record.getattr(names.record_type.bind(py))?;
        let intent = record.getattr(names.intent.bind(py))?;
        if !record_type.is(self.command.bind(py))
            || !self.intents.contains(&(intent.as_ptr() as usize))
            || record
                .getattr(names.value_type.bind(py))?
                .is(self.no_key_check.bind(py))
            || record.getattr(names.key.bind(py))?.extract::<i64>()? != -1
        {
            return Ok(None);
        }
        if let Some(route) = &self.route {
            if route.bind(py).call1((&record,))?.extract::<i64>()? != self.own {
                return Ok(None);
            }
        }
        let reply = if replied {
            self.reply_to.bind(py).call1((&headers,))?
        } else {
            py.None().into_bound(py)
        };
        let Ok(mut encoded) = self
            .encoder
            .get()
            .encode_each(std::iter::once(record.clone()))
        else {
            return Ok(None);
        };
        let Some(encoded) = encoded.pop() else {
            return Ok(None);
        };
        let kind_headers =
            self.headers
                .get(&record, &record_type, &intent, self.headers_of.bind(py))?;
        let kind_headers = kind_headers.cast_into::<PyList>()?;
        let copy_headers = PyList::empty(py);
        for item in kind_headers.iter() {
            copy_headers.append(item)?;
        }
        let offset_text = PyString::new(py, &offset.to_string());
        copy_headers.append((names.ingress_offset.bind(py), offset_text))?;
        let copy = self
            .copy
            .bind(py)
            .call1((record, encoded, copy_headers, reply))?;
        Ok(Some(copy))
    }
}
