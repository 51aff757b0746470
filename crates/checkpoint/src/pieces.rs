//! Large strings stored once per thread, by content address.
//!
//! A value in state is serialized again wherever it is stored: the input
//! checkpoint's `__start__` value, the input task's pending write and the
//! channel's value of the next checkpoint all hold an input string, and a
//! list that grows (a conversation) is stored whole at every version. For
//! small values that is cheap; a 100 MB string would be stored three times.
//!
//! So the persistent savers cut every JSON string token of at least
//! [`MIN_PIECE_BYTES`] out of a serialized value before they store it: the
//! token (quotes and escapes included) becomes a *piece*, stored once per
//! thread under its SHA-256 ([`PieceId`]); the value is stored as a
//! *skeleton* tagged [`PIECED_TAG`], in which each cut token is replaced by
//! a zero byte followed by the piece's 32-byte id. A zero byte never occurs
//! in JSON text (control characters inside strings are escaped), so a
//! skeleton is read back by splicing each piece in at its marker, without
//! parsing it ([`join`]). Values without such a string are stored exactly
//! as serialized, tag and all.
//!
//! A saver stores a value's pieces in the same transaction as the value,
//! deletes a thread's pieces with the thread, and drops pieces no value of
//! the thread refers to ([`references`]) when it prunes.

use std::fmt;
use std::ops::Range;

use sha2::{Digest, Sha256};

use crate::serde::{Encoded, JsonSerializer};

/// The shortest JSON string token (quotes included) stored as a piece.
///
/// Below this size a piece's own row and lookup cost more than storing the
/// text again; above it, the text is stored once per thread.
pub const MIN_PIECE_BYTES: usize = 16 * 1024;

/// The tag of a skeleton: a [`JsonSerializer`] value whose large strings
/// are stored as pieces.
pub const PIECED_TAG: &str = "json+pieces";

/// The byte that marks a piece in a skeleton: never part of JSON text.
const MARKER: u8 = 0;

/// A piece's content address: the SHA-256 of its bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PieceId([u8; 32]);

impl PieceId {
    /// The id of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// The id stored as `bytes`, or `None` unless they are 32 bytes long.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        bytes.try_into().ok().map(Self)
    }

    /// The id's 32 bytes, as stored.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for PieceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
    }
}

impl fmt::Debug for PieceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PieceId({self})")
    }
}

/// A serialized value as a saver stores it: whole, or as a skeleton plus
/// the pieces cut out of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    tag: String,
    /// The value as serialized.
    bytes: Vec<u8>,
    /// The skeleton, when pieces were cut out.
    skeleton: Option<Vec<u8>>,
    /// Each piece's id and where it lies in `bytes`.
    pieces: Vec<(PieceId, Range<usize>)>,
}

impl Stored {
    /// Cuts the large string tokens out of a [`JsonSerializer`] value;
    /// anything else (another format, no large string) is kept whole.
    pub fn new(encoded: Encoded) -> Self {
        Self::with_min_piece(encoded, MIN_PIECE_BYTES)
    }

    /// [`Stored::new`] with another piece threshold: lets the fuzz target
    /// cut the short inputs it generates. Not part of the API.
    #[doc(hidden)]
    pub fn with_min_piece(encoded: Encoded, min_piece: usize) -> Self {
        let pieces = if encoded.tag == JsonSerializer::TAG {
            large_strings(&encoded.bytes, min_piece)
        } else {
            Vec::new()
        };
        let skeleton = (!pieces.is_empty()).then(|| skeleton(&encoded.bytes, &pieces));
        Self {
            tag: encoded.tag,
            bytes: encoded.bytes,
            skeleton,
            pieces,
        }
    }

    /// The tag to store: [`PIECED_TAG`] for a skeleton, else the value's own.
    pub fn tag(&self) -> &str {
        match self.skeleton {
            Some(_) => PIECED_TAG,
            None => &self.tag,
        }
    }

    /// The bytes to store in the value's row: the skeleton, or the value.
    pub fn bytes(&self) -> &[u8] {
        self.skeleton.as_deref().unwrap_or(&self.bytes)
    }

    /// The pieces to store beside the row (none when stored whole). The
    /// same piece may occur more than once.
    pub fn pieces(&self) -> impl Iterator<Item = (&PieceId, &[u8])> {
        self.pieces
            .iter()
            .map(|(id, range)| (id, &self.bytes[range.clone()]))
    }
}

/// A skeleton refers to a piece that is not stored, or is malformed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JoinError {
    /// The skeleton names a piece the lookup did not find.
    #[error("piece {0} is not stored")]
    Missing(PieceId),
    /// A marker is cut short: the skeleton is not one a saver wrote.
    #[error("the skeleton ends inside a piece marker")]
    Truncated,
}

/// Rebuilds a value's serialized bytes from its skeleton, splicing in each
/// piece `lookup` returns (`None`: not stored).
///
/// # Errors
/// The outer error is `lookup`'s own; the inner one a piece `lookup` does
/// not have or a cut-short marker, for the caller to report with the
/// value's thread and channel ([`Error::Piece`](crate::Error::Piece)).
pub fn join<B: AsRef<[u8]>>(
    skeleton: &[u8],
    mut lookup: impl FnMut(PieceId) -> crate::Result<Option<B>>,
) -> crate::Result<Result<Vec<u8>, JoinError>> {
    let mut out = Vec::with_capacity(skeleton.len());
    let mut rest = skeleton;
    while let Some(at) = rest.iter().position(|&b| b == MARKER) {
        out.extend_from_slice(&rest[..at]);
        let Some(id) = rest.get(at + 1..at + 33).and_then(PieceId::from_slice) else {
            return Ok(Err(JoinError::Truncated));
        };
        let Some(piece) = lookup(id)? else {
            return Ok(Err(JoinError::Missing(id)));
        };
        out.extend_from_slice(piece.as_ref());
        rest = &rest[at + 33..];
    }
    out.extend_from_slice(rest);
    Ok(Ok(out))
}

/// The pieces a skeleton refers to, in order (a cut-short marker ends the
/// list; [`join`] reports it).
pub fn references(skeleton: &[u8]) -> impl Iterator<Item = PieceId> + '_ {
    let mut rest = skeleton;
    std::iter::from_fn(move || {
        let at = rest.iter().position(|&b| b == MARKER)?;
        let id = rest.get(at + 1..at + 33).and_then(PieceId::from_slice)?;
        rest = &rest[at + 33..];
        Some(id)
    })
}

/// The string tokens of JSON text at least `min_piece` bytes long (quotes
/// included), with their ids. Outside strings JSON has no `"`, so
/// each `"` found there opens a string, which the next unescaped `"`
/// closes. Text cut short inside a string yields no piece for it.
fn large_strings(json: &[u8], min_piece: usize) -> Vec<(PieceId, Range<usize>)> {
    let mut found = Vec::new();
    if json.len() < min_piece {
        return found;
    }
    let mut at = 0;
    while let Some(open) = json[at..].iter().position(|&b| b == b'"').map(|i| at + i) {
        let mut scan = open + 1;
        let close = loop {
            match json[scan..]
                .iter()
                .position(|&b| b == b'"' || b == b'\\')
                .map(|i| scan + i)
            {
                Some(quote) if json[quote] == b'"' => break quote,
                Some(backslash) => scan = backslash + 2,
                None => return found,
            }
            if scan >= json.len() {
                return found;
            }
        };
        let token = open..close + 1;
        if token.len() >= min_piece {
            found.push((PieceId::of(&json[token.clone()]), token));
        }
        at = close + 1;
    }
    found
}

/// `json` with each piece's token replaced by its marker.
fn skeleton(json: &[u8], pieces: &[(PieceId, Range<usize>)]) -> Vec<u8> {
    let cut: usize = pieces.iter().map(|(_, range)| range.len()).sum();
    let mut out = Vec::with_capacity(json.len() - cut + pieces.len() * 33);
    let mut at = 0;
    for (id, range) in pieces {
        out.extend_from_slice(&json[at..range.start]);
        out.push(MARKER);
        out.extend_from_slice(id.as_bytes());
        at = range.end;
    }
    out.extend_from_slice(&json[at..]);
    out
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;
    use serde_json::json;
    use stategraph_core::Value;

    use super::*;
    use crate::serde::Serializer;

    fn encode(value: &serde_json::Value) -> Encoded {
        JsonSerializer
            .dumps("c", &Value::from_json(value.clone()))
            .unwrap()
    }

    /// Stores `stored`'s pieces in `table` and joins its skeleton back.
    fn round_trip(stored: &Stored, table: &mut HashMap<PieceId, Vec<u8>>) -> Vec<u8> {
        for (id, bytes) in stored.pieces() {
            table.insert(*id, bytes.to_vec());
        }
        if stored.tag() != PIECED_TAG {
            return stored.bytes().to_vec();
        }
        join(stored.bytes(), |id| Ok(table.get(&id)))
            .unwrap()
            .unwrap()
    }

    #[test]
    fn small_values_are_stored_whole() {
        let encoded = encode(&json!({"a": "x".repeat(MIN_PIECE_BYTES - 3), "b": [1, 2]}));
        let stored = Stored::new(encoded.clone());
        assert_eq!(stored.tag(), "json");
        assert_eq!(stored.bytes(), encoded.bytes);
        assert_eq!(stored.pieces().count(), 0);
    }

    #[test]
    fn large_strings_become_pieces_and_join_back() {
        let big = "ab\"c\\d\u{1}é".repeat(MIN_PIECE_BYTES);
        let value = json!({"text": big, "copy": big, "n": 1, "key": "short"});
        let encoded = encode(&value);
        let stored = Stored::new(encoded.clone());
        assert_eq!(stored.tag(), PIECED_TAG);
        // Twice the same text: two cuts, one id.
        let ids: Vec<_> = stored.pieces().map(|(id, _)| *id).collect();
        assert_eq!(ids.len(), 2);
        assert_eq!(ids[0], ids[1]);
        assert!(stored.bytes().len() < 200, "{}", stored.bytes().len());
        assert_eq!(references(stored.bytes()).collect::<Vec<_>>(), ids);
        let mut table = HashMap::new();
        assert_eq!(round_trip(&stored, &mut table), encoded.bytes);
        assert_eq!(table.len(), 1);
    }

    #[test]
    fn the_same_text_in_another_value_has_the_same_id() {
        let big = "z".repeat(MIN_PIECE_BYTES * 2);
        let input = Stored::new(encode(&json!({"text": big})));
        let channel = Stored::new(encode(&json!(big)));
        let id = |s: &Stored| s.pieces().map(|(id, _)| *id).collect::<Vec<_>>();
        assert_eq!(id(&input), id(&channel));
    }

    #[test]
    fn a_missing_or_cut_short_piece_is_an_error() {
        let stored = Stored::new(encode(&json!(["y".repeat(MIN_PIECE_BYTES)])));
        let id = *stored.pieces().next().unwrap().0;
        let none = |_| Ok(None::<Vec<u8>>);
        assert_eq!(
            join(stored.bytes(), none).unwrap(),
            Err(JoinError::Missing(id))
        );
        let short = &stored.bytes()[..10];
        assert_eq!(join(short, none).unwrap(), Err(JoinError::Truncated));
        assert_eq!(references(short).count(), 0);
    }

    #[test]
    fn other_formats_are_never_cut() {
        let encoded = Encoded {
            tag: "other".into(),
            bytes: format!("\"{}\"", "q".repeat(MIN_PIECE_BYTES)).into_bytes(),
        };
        assert_eq!(Stored::new(encoded).tag(), "other");
    }

    proptest! {
        /// Any JSON round-trips, whatever mix of short and long strings
        /// (with quotes, backslashes and control characters) it holds.
        #[test]
        fn every_value_round_trips(
            strings in proptest::collection::vec(
                (prop::sample::select(vec!["a", "\"", "\\", "\u{0}", "\n", "é", "\\\""]),
                 0..MIN_PIECE_BYTES + 20),
                1..6),
        ) {
            let items: Vec<serde_json::Value> = strings
                .iter()
                .map(|(unit, n)| json!({"s": unit.repeat(*n / unit.len().max(1)), "k": n}))
                .collect();
            let encoded = encode(&serde_json::Value::Array(items));
            let stored = Stored::new(encoded.clone());
            let mut table = HashMap::new();
            prop_assert_eq!(round_trip(&stored, &mut table), encoded.bytes);
        }
    }
}
