//! Partita's compiled core: the Avro decoder and encoder, and two loops of the hot path.
//!
//! - `decode`: `Decoder`, which interprets a program compiled from the schema (`program`)
//!   over a byte `reader`, sharing repeated strings (`texts`); `assembly` builds whole
//!   records from the envelope (`Decoder.decode_record`).
//! - `encode`: `Encoder`, the same programs' other direction, reading exact classes from
//!   their `slots`.
//! - `produce`: `Encoder.produce_all`, a batch encoded and handed to a producer.
//! - `admit`: `Admitter`, the common case of admitting client commands.
//! - `headers`: the headers kept per kind of record; `hash`: the address-keyed tables.
//!
//! Each loop stands beside a Python path that stays the reference: parity fuzz tests compare
//! them, and the pure-Python suite runs without this module.

mod admit;
mod assembly;
mod decode;
mod encode;
mod hash;
mod headers;
mod produce;
mod program;
mod reader;
mod slots;
mod texts;

use pyo3::prelude::*;

#[pymodule]
fn partita_native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<decode::Decoder>()?;
    module.add_class::<encode::Encoder>()?;
    module.add_class::<admit::Admitter>()?;
    Ok(())
}
