//! [`List`]: an immutable-by-default list whose clones and concatenations
//! share storage.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Index;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Adjacent chunks are merged while together they hold at most this many items.
const MERGE_LIMIT: usize = 64;

/// A list that shares its storage: cloning is one reference-count increment,
/// and `a + b` ([`List::concat`]) shares both sides' items instead of copying
/// them.
///
/// State lists are read by nodes, shown in stream chunks and kept by
/// checkpoints while reducers keep extending them, so the list a reducer
/// extends is almost always shared. A `Vec` must then be copied whole on every
/// append; a `List` copies at most a few dozen items. Use it for append-only
/// state keys that grow large (message histories, event logs); it serializes
/// as a plain JSON array, so checkpoints are the same as a `Vec`'s.
///
/// Items live in chunks of shared vectors. Two neighbouring chunks always hold
/// more than 64 items together, so a list of `n` items has at most `n / 32 + 1`
/// chunks: concatenation costs one pointer copy per chunk (when the list is
/// shared) plus at most 64 item clones, `push` onto an unshared list is
/// amortized O(1), and indexing is a binary search over the chunks.
///
/// ```
/// use stategraph_core::List;
///
/// let history: List<&str> = List::from(vec!["hi", "hello"]);
/// let kept = history.clone(); // shares the items
/// let longer = history.concat(List::from(vec!["how are you?"]));
/// assert_eq!(longer.len(), 3);
/// assert_eq!(longer.last(), Some(&"how are you?"));
/// assert_eq!(kept.len(), 2);
/// assert_eq!(longer.iter().copied().collect::<Vec<_>>(), ["hi", "hello", "how are you?"]);
/// ```
pub struct List<T> {
    chunks: Arc<Vec<Chunk<T>>>,
    len: usize,
}

struct Chunk<T> {
    // Index one past this chunk's last item in the whole list.
    end: usize,
    items: Arc<Vec<T>>,
}

impl<T> Clone for Chunk<T> {
    fn clone(&self) -> Self {
        Self {
            end: self.end,
            items: self.items.clone(),
        }
    }
}

impl<T> List<T> {
    /// An empty list (no allocation until the first item).
    pub fn new() -> Self {
        Self {
            chunks: Arc::new(Vec::new()),
            len: 0,
        }
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the list has no items.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The item at `index`, if there is one.
    pub fn get(&self, index: usize) -> Option<&T> {
        if index >= self.len {
            return None;
        }
        let chunk = self.chunks.partition_point(|c| c.end <= index);
        let chunk = self.chunks.get(chunk)?;
        chunk.items.get(index + chunk.items.len() - chunk.end)
    }

    /// The first item.
    pub fn first(&self) -> Option<&T> {
        self.chunks.first().and_then(|c| c.items.first())
    }

    /// The last item.
    pub fn last(&self) -> Option<&T> {
        self.chunks.last().and_then(|c| c.items.last())
    }

    /// The items in order.
    pub fn iter(&self) -> Iter<'_, T> {
        Iter {
            chunks: self.chunks.iter(),
            current: [].iter(),
            remaining: self.len,
        }
    }

    /// Whether two lists share the same storage (then they are equal).
    pub fn ptr_eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.chunks, &other.chunks)
    }
}

impl<T: Clone> List<T> {
    /// Appends one item (in place when nothing else shares the last chunk).
    pub fn push(&mut self, item: T) {
        self.append_chunk(Arc::new(vec![item]));
    }

    /// `self + other`: the items of both, sharing `other`'s chunks.
    #[must_use]
    pub fn concat(mut self, other: Self) -> Self {
        self.append(&other);
        self
    }

    /// Appends the items of `other`, sharing its chunks.
    pub fn append(&mut self, other: &Self) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            *self = other.clone();
            return;
        }
        for chunk in other.chunks.iter() {
            self.append_chunk(chunk.items.clone());
        }
    }

    /// The items as a `Vec` (clones every item).
    pub fn to_vec(&self) -> Vec<T> {
        self.iter().cloned().collect()
    }

    fn append_chunk(&mut self, items: Arc<Vec<T>>) {
        if items.is_empty() {
            return;
        }
        let added = items.len();
        let chunks = Arc::make_mut(&mut self.chunks);
        match chunks.last_mut() {
            Some(last) if last.items.len() + added <= MERGE_LIMIT => {
                let merged = Arc::make_mut(&mut last.items);
                merged.extend(items.iter().cloned());
                last.end += added;
            }
            _ => chunks.push(Chunk {
                end: self.len + added,
                items,
            }),
        }
        self.len += added;
    }
}

impl<T> Default for List<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for List<T> {
    fn clone(&self) -> Self {
        Self {
            chunks: self.chunks.clone(),
            len: self.len,
        }
    }
}

impl<T> From<Vec<T>> for List<T> {
    fn from(items: Vec<T>) -> Self {
        let len = items.len();
        if len == 0 {
            return Self::new();
        }
        Self {
            chunks: Arc::new(vec![Chunk {
                end: len,
                items: Arc::new(items),
            }]),
            len,
        }
    }
}

impl<T: Clone, const N: usize> From<[T; N]> for List<T> {
    fn from(items: [T; N]) -> Self {
        Self::from(Vec::from(items))
    }
}

impl<T> FromIterator<T> for List<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Self::from(iter.into_iter().collect::<Vec<T>>())
    }
}

impl<T: Clone> Extend<T> for List<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        let items: Vec<T> = iter.into_iter().collect();
        self.append_chunk(Arc::new(items));
    }
}

impl<T> Index<usize> for List<T> {
    type Output = T;

    /// # Panics
    /// When `index` is out of bounds, as slices do; use [`List::get`] to check.
    fn index(&self, index: usize) -> &T {
        match self.get(index) {
            Some(item) => item,
            None => panic!(
                "index out of bounds: the len is {} but the index is {index}",
                self.len
            ),
        }
    }
}

impl<T: PartialEq> PartialEq for List<T> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && (self.ptr_eq(other) || self.iter().eq(other.iter()))
    }
}

impl<T: Eq> Eq for List<T> {}

impl<T: PartialEq> PartialEq<Vec<T>> for List<T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        self.len == other.len() && self.iter().eq(other.iter())
    }
}

impl<T: Hash> Hash for List<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.len);
        for item in self {
            item.hash(state);
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for List<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Serialize> Serialize for List<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<T>::deserialize(deserializer).map(Self::from)
    }
}

impl<'a, T> IntoIterator for &'a List<T> {
    type Item = &'a T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

/// The items of a [`List`], in order.
pub struct Iter<'a, T> {
    chunks: std::slice::Iter<'a, Chunk<T>>,
    current: std::slice::Iter<'a, T>,
    remaining: usize,
}

impl<'a, T> Iterator for Iter<'a, T> {
    type Item = &'a T;

    fn next(&mut self) -> Option<&'a T> {
        loop {
            if let Some(item) = self.current.next() {
                self.remaining -= 1;
                return Some(item);
            }
            self.current = self.chunks.next()?.items.iter();
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl<T> ExactSizeIterator for Iter<'_, T> {}

impl<T> std::iter::FusedIterator for Iter<'_, T> {}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn chunk_lens<T>(list: &List<T>) -> Vec<usize> {
        list.chunks.iter().map(|c| c.items.len()).collect()
    }

    #[test]
    fn concat_shares_the_other_side() {
        let big: List<u32> = (0..1000).collect();
        let joined = List::from(vec![1, 2]).concat(big.clone());
        assert_eq!(joined.len(), 1002);
        assert!(Arc::ptr_eq(&joined.chunks[1].items, &big.chunks[0].items));
        assert_eq!(joined[0], 1);
        assert_eq!(joined[2], 0);
        assert_eq!(joined[1001], 999);
        assert_eq!(joined.get(1002), None);
    }

    #[test]
    fn small_appends_merge_into_chunks() {
        let mut list = List::new();
        let mut kept = Vec::new();
        for i in 0..1000 {
            list.push(i);
            // Sharing the list each step must not break the chunk bound.
            kept.push(list.clone());
        }
        assert!(chunk_lens(&list).len() <= 1000 / 32 + 1);
        assert!(chunk_lens(&list).iter().all(|n| *n <= MERGE_LIMIT));
        assert_eq!(kept[10].to_vec(), (0..=10).collect::<Vec<_>>());
    }

    #[test]
    fn serializes_as_an_array() {
        let list = List::from(vec![1, 2]).concat(List::from(vec![3]));
        let json = serde_json::to_value(&list).unwrap_or_default();
        assert_eq!(json, serde_json::json!([1, 2, 3]));
        let back: List<i32> = serde_json::from_value(json).unwrap_or_default();
        assert_eq!(back, list);
        assert_eq!(format!("{list:?}"), "[1, 2, 3]");
    }

    #[test]
    fn indexing_past_the_end_panics_like_a_slice() {
        let list = List::from(vec![1]);
        assert_eq!(list[0], 1);
        assert!(std::panic::catch_unwind(|| list[1]).is_err());
    }

    proptest! {
        /// Whatever the sequence of pushes and concatenations, a list holds
        /// the same items as the `Vec` built the same way, and neighbouring
        /// chunks keep more than the merge limit together.
        #[test]
        fn behaves_like_a_vec(ops in proptest::collection::vec((0_u8..3, 0_usize..200), 0..60)) {
            let mut list: List<usize> = List::new();
            let mut model: Vec<usize> = Vec::new();
            let mut shelf: Vec<(List<usize>, Vec<usize>)> = Vec::new();
            for (op, n) in ops {
                match op {
                    0 => {
                        list.push(n);
                        model.push(n);
                    }
                    1 => {
                        let other: List<usize> = (0..n).collect();
                        list = list.concat(other);
                        model.extend(0..n);
                    }
                    _ => {
                        // An earlier state of the list (kept small: each
                        // such concatenation may double the length).
                        if let Some((l, m)) = shelf.pop().filter(|(l, _)| l.len() < 2_000) {
                            list = list.concat(l);
                            model.extend(m);
                        }
                    }
                }
                shelf.push((list.clone(), model.clone()));
                prop_assert_eq!(list.len(), model.len());
                prop_assert_eq!(list.iter().len(), model.len());
                prop_assert!(list.iter().eq(model.iter()));
                prop_assert_eq!(list.last(), model.last());
                for probe in [0, model.len() / 2, model.len().saturating_sub(1), model.len()] {
                    prop_assert_eq!(list.get(probe), model.get(probe));
                }
                let lens = chunk_lens(&list);
                prop_assert!(lens.windows(2).all(|w| w[0] + w[1] > MERGE_LIMIT));
            }
            for (l, m) in shelf {
                prop_assert!(l.iter().eq(m.iter()));
            }
        }
    }
}
