//! The headers of each kind of record, kept for the produce loop and the admitter.

use std::sync::Mutex;

use pyo3::prelude::*;

use crate::hash::HashMap;

/// The headers of each kind of record, as `headers_of(record)` gives them (a shared list per
/// kind, `partita.protocol.headers.record_headers`), kept by the addresses of the record's
/// type and intent (enum members, which live as long as the interpreter).
#[derive(Default)]
pub(crate) struct HeaderCache(Mutex<HashMap<(usize, usize), Py<PyAny>>>);

impl HeaderCache {
    pub(crate) fn get<'py>(
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
