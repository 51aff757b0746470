//! [`FxBuild`]: a fast hasher for maps keyed by program-chosen names.

/// A `BuildHasher` for maps keyed by names from a graph definition: one
/// xor and folded multiply per 8 bytes (in the spirit of rustc's Fx hash),
/// many times faster than SipHash on short keys. Not resistant to hash flooding: use it
/// only for keys the program itself chooses.
#[derive(Clone, Copy, Debug, Default)]
pub struct FxBuild;

impl std::hash::BuildHasher for FxBuild {
    type Hasher = FxHasher;

    fn build_hasher(&self) -> FxHasher {
        FxHasher(0x243f_6a88_85a3_08d3)
    }
}

/// The hasher of [`FxBuild`].
#[derive(Debug)]
pub struct FxHasher(u64);

impl FxHasher {
    /// Folded multiply: the 128-bit product's halves xored, so every input
    /// bit reaches every output bit (a plain multiply only carries upwards).
    fn add(&mut self, word: u64) {
        let product = u128::from(self.0 ^ word) * 0x9e37_79b9_7f4a_7c15_u128;
        self.0 = (product as u64) ^ ((product >> 64) as u64);
    }
}

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            // The unused top byte holds the tail's length, so a tail never
            // hashes like itself padded with zero bytes.
            let mut word = [0; 8];
            word[..rest.len()].copy_from_slice(rest);
            word[7] = rest.len() as u8;
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};
    use std::hash::BuildHasher;

    use super::*;

    #[test]
    fn equal_names_hash_equal_and_distinct_names_spread() {
        let hash = |s: &str| FxBuild.hash_one(s);
        assert_eq!(hash("node_1"), hash(&String::from("node_1")));
        let names: Vec<String> = (0..10_000).map(|i| format!("branch:to:node_{i}")).collect();
        let distinct: HashSet<u64> = names.iter().map(|n| hash(n)).collect();
        assert_eq!(distinct.len(), names.len());
        // Prefixes and lengths that differ only in the padded tail differ too.
        assert_ne!(hash("a"), hash("a\0"));
        let mut map: HashMap<&str, usize, FxBuild> = HashMap::default();
        for (i, name) in names.iter().enumerate() {
            map.insert(name, i);
        }
        assert_eq!(map["branch:to:node_9999"], 9_999);
    }
}
