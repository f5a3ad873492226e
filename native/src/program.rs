//! The programs Python compiles from the schema (`partita.protocol.native`) for the decoder
//! and the encoder, parsed into ops.
//!
//! The decoder's program has one entry per Avro record, `(class or None, (op, ...))`, where an
//! op is one of
//!
//! - `("long",)` for int and long, `("string",)`, `("bytes",)`, `("boolean",)`, `("null",)`;
//! - `("enum", symbols)`: the index picks one of `symbols` (any Python objects);
//! - `("nullable", op)`: the union `["null", T]`;
//! - `("union", ((name, record index), ...))`: gives `(name, value)`;
//! - `("record", record index)`, `("array", op)` (gives a tuple), `("map", op)` (gives a dict).
//!
//! The encoder's has `(attribute names, ops, class or None)` per record, with the same ops plus
//! `("int",)` (32 bits), and `("enum", {member: index})`, `("union", {class: (branch, record
//! index)})`.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use crate::hash::HashMap;
use crate::slots::Slots;

/// Records inside records, at most: the schema nests a few levels, and a recursive schema must
/// not let a hostile record exhaust the stack.
pub(crate) const MAX_DEPTH: u32 = 64;

/// Whether a record may start inside `depth` others: fewer than `MAX_DEPTH`.
#[inline(always)]
pub(crate) fn within_depth(depth: u32) -> bool {
    depth < MAX_DEPTH
}

/// A decoder op.
pub(crate) enum Op {
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

/// A record of the decoder's program: built by calling `class` with its fields, or a tuple.
pub(crate) struct RecordProgram {
    pub(crate) class: Option<Py<PyAny>>,
    pub(crate) fields: Vec<Op>,
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

/// The decoder's program, every record index it names checked to exist.
pub(crate) fn parse_program(program: &Bound<'_, PyAny>) -> PyResult<Vec<RecordProgram>> {
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
    if defines_every_record(&records) {
        Ok(records)
    } else {
        Err(PyValueError::new_err(
            "the program names a record it does not define",
        ))
    }
}

/// Whether every record index the decoder's `records` name exists.
fn defines_every_record(records: &[RecordProgram]) -> bool {
    fn walk(op: &Op, count: usize) -> bool {
        match op {
            Op::Record(index) => *index < count,
            Op::Union(branches) => branches.iter().all(|(_, index)| *index < count),
            Op::Nullable(inner) | Op::Array(inner) | Op::Map(inner) => walk(inner, count),
            _ => true,
        }
    }
    let count = records.len();
    records
        .iter()
        .all(|record| record.fields.iter().all(|op| walk(op, count)))
}

/// An encoder op. Enum members and union classes are looked up by identity, never through
/// Python's `__hash__`: the maps are keyed by their addresses, and the op holds a reference
/// to each (the `Vec`s, never read) so that no address can be reused while the op lives.
#[allow(dead_code)]
pub(crate) enum EncodeOp {
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

/// A record of the encoder's program: each attribute written with its op.
pub(crate) struct EncodeRecord {
    pub(crate) attributes: Vec<Py<PyString>>,
    pub(crate) ops: Vec<EncodeOp>,
    pub(crate) slots: Option<Slots>,
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

/// The encoder's program: at least one record, each with as many attributes as ops, every
/// record index it names checked to exist.
pub(crate) fn parse_encode_program(program: &Bound<'_, PyAny>) -> PyResult<Vec<EncodeRecord>> {
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
    if records.is_empty() || !encode_defines_every_record(&records) {
        return Err(PyValueError::new_err(
            "the program names a record it does not define",
        ));
    }
    Ok(records)
}

/// Whether every record index the encoder's `records` name exists.
fn encode_defines_every_record(records: &[EncodeRecord]) -> bool {
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
    records
        .iter()
        .all(|r| r.ops.iter().all(|op| walk(op, count)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(fields: Vec<Op>) -> RecordProgram {
        RecordProgram {
            class: None,
            fields,
        }
    }

    fn encode_record(ops: Vec<EncodeOp>) -> EncodeRecord {
        EncodeRecord {
            attributes: Vec::new(),
            ops,
            slots: None,
        }
    }

    #[test]
    fn records_may_nest_up_to_the_limit() {
        assert!(within_depth(0));
        assert!(within_depth(MAX_DEPTH - 1));
        assert!(!within_depth(MAX_DEPTH));
        assert!(!within_depth(u32::MAX));
    }

    #[test]
    fn a_decoder_program_names_only_records_it_defines() {
        let nested = |index| {
            Op::Array(Box::new(Op::Map(Box::new(Op::Nullable(Box::new(
                Op::Record(index),
            ))))))
        };
        let good = [
            record(vec![Op::Long, Op::Record(1), nested(0)]),
            record(vec![Op::Text, Op::Union(Vec::new()), Op::Record(1)]),
        ];
        assert!(defines_every_record(&good));
        assert!(defines_every_record(&[]));
        assert!(!defines_every_record(&[record(vec![Op::Record(1)])]));
        assert!(!defines_every_record(&[record(vec![Op::Long, nested(1)])]));
        assert!(!defines_every_record(&[record(vec![Op::Record(
            usize::MAX
        )])]));
    }

    #[test]
    fn an_encoder_program_names_only_records_it_defines() {
        let union = |index| {
            let mut branches = HashMap::default();
            branches.insert(0x1000, (0, 0));
            branches.insert(0x2000, (1, index));
            EncodeOp::Union(branches, Vec::new())
        };
        let good = [
            encode_record(vec![EncodeOp::Int, union(1)]),
            encode_record(vec![EncodeOp::Array(Box::new(EncodeOp::Record(0)))]),
        ];
        assert!(encode_defines_every_record(&good));
        assert!(!encode_defines_every_record(&[encode_record(vec![union(
            1
        )])]));
        assert!(!encode_defines_every_record(&[encode_record(vec![
            EncodeOp::Nullable(Box::new(EncodeOp::Map(Box::new(EncodeOp::Record(2)))))
        ])]));
    }
}
