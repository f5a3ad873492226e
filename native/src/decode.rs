//! The Avro decoder (`Decoder`), which knows nothing of Partita's schema: it interprets a
//! program compiled from it in Python ([`crate::program`]).
//!
//! A record with a class is built by calling the class with its fields in schema order; the
//! first record (the envelope) has none and comes back as a tuple. The result is exactly what
//! the pure-Python decoder of `partita.protocol.decoder` returns, which the parity tests check.
//! Given an *assembly* too ([`crate::assembly`]), `decode_record` builds the whole record object
//! from the envelope, as `partita.protocol.codec` does from that tuple.
//! Malformed input raises `ValueError` naming what was wrong and at which byte; nothing panics.

use std::sync::Mutex;

use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyTuple};

use crate::assembly::Assembly;
use crate::program::{parse_program, within_depth, Op, RecordProgram, MAX_DEPTH};
use crate::reader::{Malformed, Read, Reader};
use crate::texts::Texts;

// No doc comment: it would become the class's `__doc__`, which is empty.
#[pyclass(frozen)]
pub(crate) struct Decoder {
    pub(crate) records: Vec<RecordProgram>,
    pub(crate) texts: Mutex<Texts>,
    pub(crate) assembly: Option<Assembly>,
}

impl Decoder {
    pub(crate) fn value(
        &self,
        py: Python<'_>,
        reader: &mut Reader<'_>,
        texts: &mut Texts,
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
                texts.string(py, text)
            }
            Op::Bytes => PyBytes::new(py, reader.slice()?).into_any().unbind(),
            Op::Boolean => PyBool::new(py, reader.boolean()?)
                .to_owned()
                .into_any()
                .unbind(),
            Op::Null => py.None(),
            Op::Enum(symbols) => symbols[reader.index(symbols.len(), "enum index")?].clone_ref(py),
            Op::Nullable(inner) => match reader.index(2, "union branch")? {
                0 => py.None(),
                _ => self.value(py, reader, texts, inner, depth)?,
            },
            Op::Union(branches) => {
                let (name, record) = &branches[reader.index(branches.len(), "union branch")?];
                let value = self.record(py, reader, texts, *record, depth)?;
                PyTuple::new(py, [name.clone_ref(py), value])
                    .map_err(py_failure)?
                    .into_any()
                    .unbind()
            }
            Op::Record(index) => self.record(py, reader, texts, *index, depth)?,
            Op::Array(item) => {
                let mut items = Vec::new();
                loop {
                    let count = reader.count()?;
                    if count == 0 {
                        break;
                    }
                    for _ in 0..count {
                        items.push(self.value(py, reader, texts, item, depth)?);
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
                        let key = texts.string(py, text);
                        let value = self.value(py, reader, texts, item, depth)?;
                        map.set_item(key, value).map_err(py_failure)?;
                    }
                }
                map.into_any().unbind()
            }
        })
    }

    /// Record `index` of the program, inside `depth` others.
    pub(crate) fn record(
        &self,
        py: Python<'_>,
        reader: &mut Reader<'_>,
        texts: &mut Texts,
        index: usize,
        depth: u32,
    ) -> Read<Py<PyAny>> {
        if !within_depth(depth) {
            return Err(Malformed(format!(
                "records nested deeper than {MAX_DEPTH} at byte {}",
                reader.pos
            )));
        }
        let depth = depth + 1;
        let program = &self.records[index];
        let mut fields = Vec::with_capacity(program.fields.len());
        for op in &program.fields {
            fields.push(self.value(py, reader, texts, op, depth)?);
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
        let records = parse_program(program)?;
        let mut decoder = Decoder {
            records,
            texts: Mutex::new(Texts::new()),
            assembly: None,
        };
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
        let mut reader = Reader::new(buf, pos);
        match self.record(py, &mut reader, &mut texts, 0, 0) {
            Ok(value) => Ok((value, reader.pos)),
            Err(Malformed(message)) => Err(PyValueError::new_err(message)),
        }
    }
}

/// `class(*arguments)` by vectorcall, without a tuple to hold the arguments.
pub(crate) fn call(
    py: Python<'_>,
    class: &Py<PyAny>,
    arguments: &[Py<PyAny>],
) -> PyResult<Py<PyAny>> {
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
