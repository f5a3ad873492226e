//! The decoder's cache of recent strings.

use pyo3::prelude::*;
use pyo3::types::PyString;

type Slot = Option<(Box<[u8]>, Py<PyString>)>;

/// Strings met lately, by their bytes: the same few (process ids, element ids, tenants, job
/// types) fill most records, and a string shared instead of made again also brings its cached
/// hash to the dict lookups that follow. Direct-mapped, so its size is fixed whatever it reads.
pub(crate) struct Texts {
    slots: Vec<Slot>,
}

const TEXT_SLOTS: usize = 1024;

/// Longer strings are made each time (documents, messages: rarely repeated as a whole).
const TEXT_SHARED_UP_TO: usize = 64;

/// The slot that shares the string of `bytes` (below `TEXT_SLOTS`), or None when the string is
/// too long to share.
#[inline]
fn slot_of(bytes: &[u8]) -> Option<usize> {
    if bytes.len() > TEXT_SHARED_UP_TO {
        return None;
    }
    let mut hash: u32 = 0x811c_9dc5; // FNV-1a
    for &b in bytes {
        hash = (hash ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    Some(hash as usize % TEXT_SLOTS)
}

impl Texts {
    pub(crate) fn new() -> Self {
        Texts {
            slots: (0..TEXT_SLOTS).map(|_| None).collect(),
        }
    }

    /// A Python string equal to `text`: the one made last time for the same bytes when its
    /// slot still holds it.
    pub(crate) fn string(&mut self, py: Python<'_>, text: &str) -> Py<PyAny> {
        let bytes = text.as_bytes();
        let Some(index) = slot_of(bytes) else {
            return PyString::new(py, text).into_any().unbind();
        };
        let slot = &mut self.slots[index];
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_up_to_the_limit_are_shared_in_a_slot() {
        assert_eq!(slot_of(b""), Some(0x811c_9dc5 % TEXT_SLOTS));
        assert_eq!(slot_of(b"a"), Some(0xe40c_292c % TEXT_SLOTS)); // FNV-1a of "a"
        assert!(slot_of(&[b'x'; TEXT_SHARED_UP_TO]).is_some());
        assert_eq!(slot_of(&[b'x'; TEXT_SHARED_UP_TO + 1]), None);
    }

    #[test]
    fn slots_are_in_range_and_spread() {
        let mut used = vec![false; TEXT_SLOTS];
        for i in 0..4096u32 {
            let slot = slot_of(format!("element-{i}").as_bytes()).unwrap();
            used[slot] = true;
        }
        assert!(used.iter().filter(|&&u| u).count() > TEXT_SLOTS / 2);
    }

    #[test]
    fn a_new_cache_holds_nothing() {
        let texts = Texts::new();
        assert_eq!(texts.slots.len(), TEXT_SLOTS);
        assert!(texts.slots.iter().all(Option::is_none));
    }
}
