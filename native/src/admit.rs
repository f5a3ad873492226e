//! The common case of admitting client commands (`Admitter`), beside the Python path of
//! `partita.stream.processing.admission` that stays the one that decides.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use crate::decode::Decoder;
use crate::encode::Encoder;
use crate::hash::HashSet;
use crate::headers::HeaderCache;

/// The common case of admitting client commands (`engine.stream.ingress`), compiled: a record
/// of the ingress topic that declares no record type but COMMAND, decodes with the current
/// schema, is a COMMAND of an intent clients may send, names no key, is routed to this
/// partition and re-encodes within the limit becomes a `Copy` for the log, normalised as the
/// Python path normalises it. Anything else stops the loop at that record, whose verdict the
/// Python path gives (it refuses, forwards or copies it, saying why): that path stays the one
/// that decides; this one only takes the records it would copy unchanged, as the parity fuzz
/// test checks.
#[pyclass(frozen)]
pub(crate) struct Admitter {
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
