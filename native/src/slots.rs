//! Reading a record's attributes from its class's slots.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyType};

/// Where an exact class keeps the record's attributes: the offsets of its `__slots__` members
/// (msgspec structs keep every field in one), read straight from an instance of exactly that
/// class instead of through `getattr`, which looks each name up in the type first.
pub(crate) struct Slots {
    pub(crate) class: Py<PyAny>,
    pub(crate) offsets: Vec<ffi::Py_ssize_t>,
}

impl Slots {
    /// The slot offsets of `attributes` in `class`, or None when one of them is not a plain
    /// object slot (a property, a method, a class attribute): those are read through `getattr`.
    pub(crate) fn of(
        class: &Bound<'_, PyAny>,
        attributes: &[Py<PyString>],
    ) -> PyResult<Option<Self>> {
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
