//! Whole records decoded in one call (`Decoder.decode_record`): the single-object framing
//! checked, the envelope decoded, and the record object built from its fields.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::decode::{call, Decoder};
use crate::hash::HashMap;
use crate::program::Op;
use crate::reader::{Read, Reader};
use crate::texts::Texts;

/// How `decode_record` turns record 0 (the envelope) into one object: `class` called with
/// `arguments`, each made from the envelope's fields (whose union field gives its value
/// alone). Two of the fields' symbols and the value's class are looked up together in
/// `kinds` (a record's value type and intent, which only make sense as a pair).
pub(crate) struct Assembly {
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

/// An assembly as Python gives it (see `Decoder::parse_assembly`).
type AssemblyParts<'py> = (
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    (usize, usize, usize),
    Bound<'py, PyDict>,
    Vec<u8>,
    usize,
);

/// Where the body starts in `data` framed as a single object: past `prefix` (the magic and the
/// schema's fingerprint), when `data` begins with it and is at most `max_bytes` long.
#[inline]
fn body_start(data: &[u8], prefix: &[u8], max_bytes: usize) -> Option<usize> {
    if data.len() > max_bytes || !data.starts_with(prefix) {
        return None;
    }
    Some(prefix.len())
}

impl Decoder {
    /// `decode_record`, with the class's arguments at the indexes of `overrides` replaced by
    /// their values (the record as `msgspec.structs.replace` would give it).
    pub(crate) fn decode_record_with(
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
        let Some(start) = body_start(data, &assembly.prefix, assembly.max_bytes) else {
            return Ok(None);
        };
        let mut texts = self
            .texts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut reader = Reader::new(data, start);
        let Ok(fields) = self.envelope(py, &mut reader, &mut texts) else {
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

    /// Record 0's fields, its union fields as their value alone (the branch's class says it).
    fn envelope(
        &self,
        py: Python<'_>,
        reader: &mut Reader<'_>,
        texts: &mut Texts,
    ) -> Read<Vec<Py<PyAny>>> {
        let program = &self.records[0];
        let mut fields = Vec::with_capacity(program.fields.len());
        for op in &program.fields {
            fields.push(match op {
                Op::Union(branches) => {
                    let (_, record) = &branches[reader.index(branches.len(), "union branch")?];
                    self.record(py, reader, texts, *record, 1)?
                }
                _ => self.value(py, reader, texts, op, 1)?,
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
    pub(crate) fn parse_assembly(&self, assembly: &Bound<'_, PyAny>) -> PyResult<Assembly> {
        if self.records.is_empty() {
            return Err(PyValueError::new_err("the decoder has no records"));
        }
        let (class, recipe, kind_fields, table, prefix, max_bytes): AssemblyParts<'_> =
            assembly.extract()?;
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
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAGIC: [u8; 2] = [0xc3, 0x01];
    const FINGERPRINT: [u8; 8] = [0x8a, 0x3e, 0x01, 0x77, 0x00, 0xf0, 0x12, 0x9c];

    fn prefix() -> Vec<u8> {
        [&MAGIC[..], &FINGERPRINT[..]].concat()
    }

    fn framed(magic: &[u8], fingerprint: &[u8], body: &[u8]) -> Vec<u8> {
        [magic, fingerprint, body].concat()
    }

    #[test]
    fn the_body_starts_past_the_magic_and_fingerprint() {
        let data = framed(&MAGIC, &FINGERPRINT, &[0x02, 0x00]);
        assert_eq!(body_start(&data, &prefix(), 1024), Some(10));
        // an empty body: the decoder then says what is missing
        assert_eq!(body_start(&prefix(), &prefix(), 1024), Some(10));
    }

    #[test]
    fn an_unknown_fingerprint_is_not_this_schema() {
        for at in 0..FINGERPRINT.len() {
            let mut other = FINGERPRINT;
            other[at] ^= 0x01;
            let data = framed(&MAGIC, &other, &[0x02]);
            assert_eq!(body_start(&data, &prefix(), 1024), None, "byte {at}");
        }
        let data = framed(&MAGIC, &[0; 8], &[0x02]);
        assert_eq!(body_start(&data, &prefix(), 1024), None);
    }

    #[test]
    fn bad_magic_is_not_a_single_object() {
        for magic in [[0xc3, 0x00], [0xc2, 0x01], [0x01, 0xc3], [0x00, 0x00]] {
            let data = framed(&magic, &FINGERPRINT, &[0x02]);
            assert_eq!(body_start(&data, &prefix(), 1024), None, "{magic:02x?}");
        }
    }

    #[test]
    fn a_header_cut_short_is_refused() {
        let full = prefix();
        for cut in 0..full.len() {
            assert_eq!(body_start(&full[..cut], &full, 1024), None, "cut at {cut}");
        }
    }

    #[test]
    fn records_over_the_size_limit_are_refused() {
        let body = vec![0x02; 90];
        let data = framed(&MAGIC, &FINGERPRINT, &body);
        assert_eq!(data.len(), 100);
        assert_eq!(body_start(&data, &prefix(), 100), Some(10));
        assert_eq!(body_start(&data, &prefix(), 99), None);
        assert_eq!(body_start(&data, &prefix(), 0), None);
        assert_eq!(body_start(&data, &prefix(), usize::MAX), Some(10));
        // a limit below the header refuses even the bare header
        assert_eq!(body_start(&prefix(), &prefix(), 9), None);
    }

    #[test]
    fn an_empty_prefix_frames_anything_within_the_limit() {
        assert_eq!(body_start(b"", b"", 0), Some(0));
        assert_eq!(body_start(b"\x00", b"", 0), None);
        assert_eq!(body_start(b"\x00", b"", 1), Some(0));
    }
}
