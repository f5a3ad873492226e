//! The Avro encoder (`Encoder`): the decoder's programs in the other direction, each record
//! behind the single-object prefix, and `encode_all`'s checks of a batch.

use pyo3::exceptions::{PyKeyError, PyOverflowError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::hash::HashMap;
use crate::produce::ProduceState;
use crate::program::{parse_encode_program, within_depth, EncodeOp, EncodeRecord, MAX_DEPTH};

/// An Avro binary encoder of Python objects, interpreting a program compiled from the schema
/// (`engine/protocol/native.py`): one entry per record, `(attribute names, ops, class or
/// None)`, where the ops are those of `Decoder` plus `("int",)` (32 bits), with `("enum",
/// {member: index})` and `("union", {class: (branch, record index)})`. An instance of exactly
/// the entry's class has its attributes read from their slots (`Slots`), anything else through
/// `getattr`. Output equals the pure-Python encoder's.
#[pyclass(frozen)]
pub(crate) struct Encoder {
    records: Vec<EncodeRecord>,
    prefix: Vec<u8>,
    /// For `encode_all`: what each record must agree with before it is written (`Kinds`).
    kinds: Option<Kinds>,
    /// For `encode_all`: the largest encoding it returns (0: any size).
    max_bytes: usize,
    /// For `produce_all`: what it keeps between calls.
    pub(crate) produce: ProduceState,
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

/// Appends `value` as an Avro long: zig-zag, then 7 bits a byte, low first (1 to 10 bytes).
#[inline(always)]
pub(crate) fn write_long(out: &mut Vec<u8>, value: i64) {
    let mut n = ((value << 1) ^ (value >> 63)) as u64;
    while n > 0x7F {
        out.push((n as u8 & 0x7F) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Appends a length or count (of a string, bytes, a block).
fn write_len(out: &mut Vec<u8>, len: usize) {
    write_long(out, len as i64);
}

/// Whether `number` fits an Avro int (32 bits).
#[inline]
fn fits_int(number: i64) -> bool {
    i32::try_from(number).is_ok()
}

/// Whether an encoding of `len` bytes is over the limit `max_bytes` (0: no limit).
#[inline]
fn over_limit(len: usize, max_bytes: usize) -> bool {
    max_bytes > 0 && len > max_bytes
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
                if !fits_int(number) {
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

    /// Record `index` of the program from `value`, inside `depth` others.
    fn record(
        &self,
        out: &mut Vec<u8>,
        value: &Bound<'_, PyAny>,
        index: usize,
        depth: u32,
    ) -> PyResult<()> {
        if !within_depth(depth) {
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
        let records = parse_encode_program(program)?;
        Ok(Encoder {
            records,
            prefix: prefix.to_vec(),
            kinds: kinds.map(Kinds::of).transpose()?,
            max_bytes,
            produce: ProduceState::new(program.py()),
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
        self.produce_pairs(
            produce, topic, pairs, start, end, own, headers_of, command, timestamp, specials,
        )
    }
}

impl Encoder {
    /// The encodings of `records`, each checked as `encode_all` says.
    pub(crate) fn encode_each<'py>(
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
            if over_limit(out.len(), self.max_bytes) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn long(value: i64) -> Vec<u8> {
        let mut out = Vec::new();
        write_long(&mut out, value);
        out
    }

    #[test]
    fn longs_are_zig_zag_varints() {
        assert_eq!(long(0), [0x00]);
        assert_eq!(long(-1), [0x01]);
        assert_eq!(long(1), [0x02]);
        assert_eq!(long(-64), [0x7f]);
        assert_eq!(long(64), [0x80, 0x01]);
        assert_eq!(long(150), [0xac, 0x02]);
        assert_eq!(
            long(i64::MAX),
            [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
        assert_eq!(
            long(i64::MIN),
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
    }

    #[test]
    fn each_seven_bits_of_magnitude_take_a_byte() {
        // n bytes hold zig-zag values below 2^(7n): longs in -2^(7n-1) .. 2^(7n-1) - 1
        for bytes in 1..=9u32 {
            let top = (1i64 << (7 * bytes - 1)) - 1;
            assert_eq!(long(top).len(), bytes as usize, "{top}");
            assert_eq!(long(-top - 1).len(), bytes as usize, "{}", -top - 1);
            assert_eq!(long(top + 1).len(), bytes as usize + 1, "{}", top + 1);
            assert_eq!(long(-top - 2).len(), bytes as usize + 1, "{}", -top - 2);
        }
        assert_eq!(long(1 << 62).len(), 10);
        assert_eq!(long(-(1 << 62) - 1).len(), 10);
    }

    #[test]
    fn avro_ints_take_at_most_five_bytes() {
        assert_eq!(long(i32::MAX.into()), [0xfe, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(long(i32::MIN.into()), [0xff, 0xff, 0xff, 0xff, 0x0f]);
    }

    #[test]
    fn ints_are_32_bit() {
        for fits in [0, 1, -1, i32::MAX.into(), i32::MIN.into()] {
            assert!(fits_int(fits), "{fits}");
        }
        for over in [
            i64::from(i32::MAX) + 1,
            i64::from(i32::MIN) - 1,
            i64::MAX,
            i64::MIN,
        ] {
            assert!(!fits_int(over), "{over}");
        }
    }

    #[test]
    fn lengths_are_written_as_longs() {
        let mut out = vec![0xaa];
        write_len(&mut out, 0);
        write_len(&mut out, 300);
        assert_eq!(out, [0xaa, 0x00, 0xd8, 0x04]);
    }

    #[test]
    fn the_size_limit_admits_exactly_max_bytes() {
        assert!(!over_limit(100, 100));
        assert!(over_limit(101, 100));
        assert!(!over_limit(0, 1));
        assert!(!over_limit(usize::MAX, usize::MAX));
    }

    #[test]
    fn a_limit_of_zero_admits_any_size() {
        assert!(!over_limit(0, 0));
        assert!(!over_limit(1 << 40, 0));
        assert!(!over_limit(usize::MAX, 0));
    }
}
