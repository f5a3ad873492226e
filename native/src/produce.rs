//! The produce loop (`Encoder.produce_all`): a batch's records encoded, then each handed to the
//! producer's `produce`. The Python loop of `partita.stream.processing.transaction` stays the
//! reference.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use crate::encode::Encoder;
use crate::headers::HeaderCache;

/// What `produce_all` keeps between calls: the headers of each kind of record, and the names
/// of the envelope's attributes it reads.
pub(crate) struct ProduceState {
    headers: HeaderCache,
    names: [Py<PyString>; 3],
}

impl ProduceState {
    pub(crate) fn new(py: Python<'_>) -> Self {
        ProduceState {
            headers: HeaderCache::default(),
            names: ["record_type", "intent", "key"].map(|n| PyString::intern(py, n).unbind()),
        }
    }
}

/// The Kafka key of a command whose record key is `number`: its 8 big-endian bytes when it is
/// positive, else none.
#[inline]
fn command_key(number: i64) -> Option<[u8; 8]> {
    (number > 0).then(|| number.to_be_bytes())
}

impl Encoder {
    /// `Encoder.produce_all`, which says what it does.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn produce_pairs(
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
        let state = &self.produce;
        let [record_type_name, intent_name, key_name] = &state.names;
        let none = py.None().into_bound(py);
        let mut specials = specials.iter().peekable();
        let (mut written, mut command_left) = (0usize, false);
        for (offset, ((partition, record), value)) in entries.iter().zip(values).enumerate() {
            let record_type = record.getattr(record_type_name.bind(py))?;
            let is_command = record_type.is(command);
            let intent = record.getattr(intent_name.bind(py))?;
            let mut headers = state
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
                if let Some(bytes) = command_key(number) {
                    key = PyBytes::new(py, &bytes).into_any();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_positive_command_key_is_its_big_endian_bytes() {
        assert_eq!(command_key(1), Some([0, 0, 0, 0, 0, 0, 0, 1]));
        assert_eq!(
            command_key(0x0102_0304_0506_0708),
            Some([1, 2, 3, 4, 5, 6, 7, 8])
        );
        assert_eq!(
            command_key(i64::MAX),
            Some([0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])
        );
    }

    #[test]
    fn no_key_is_written_for_zero_or_a_negative_key() {
        for key in [0, -1, i64::MIN] {
            assert_eq!(command_key(key), None, "{key}");
        }
    }
}
