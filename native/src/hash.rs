//! The tables keyed by object addresses.

use std::collections::{HashMap as StdHashMap, HashSet as StdHashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// Every table here is keyed by object addresses (and pairs of symbols), looked up for each
/// field of each record: a multiply-rotate hash instead of the default SipHash, which is built
/// to resist chosen keys (these come from the interpreter, not from the input).
#[derive(Default)]
pub(crate) struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0.rotate_left(26) // the multiply leaves an aligned address's low bits at zero
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.write_u64(u64::from(*byte));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

pub(crate) type HashMap<K, V> = StdHashMap<K, V, BuildHasherDefault<AddressHasher>>;
pub(crate) type HashSet<K> = StdHashSet<K, BuildHasherDefault<AddressHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    fn hash(address: usize) -> u64 {
        BuildHasherDefault::<AddressHasher>::default().hash_one(address)
    }

    #[test]
    fn aligned_addresses_differ_in_the_low_bits_a_table_indexes_by() {
        // a table of 64 buckets indexes by the low 6 bits of the hash
        let buckets: HashSet<u64> = (0..64usize)
            .map(|i| hash(0x7f00_0000_0000 + i * 16) & 63)
            .collect();
        assert!(buckets.len() > 32, "{} buckets of 64", buckets.len());
    }

    #[test]
    fn tables_keyed_by_addresses_and_tuples_find_what_they_hold() {
        let mut map: HashMap<(usize, usize, usize), usize> = HashMap::default();
        for i in 0..1000usize {
            map.insert((i * 8, i * 16, i), i);
        }
        assert!((0..1000usize).all(|i| map.get(&(i * 8, i * 16, i)) == Some(&i)));
        assert_eq!(map.get(&(8, 8, 8)), None);
    }
}
