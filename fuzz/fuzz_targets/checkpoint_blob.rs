//! Bytes read back from a saver's blob, write and checkpoint columns.
//!
//! Input: `TAG \0 BYTES` (no `\0`: the whole input is the bytes of tag
//! `json`). `JsonSerializer::loads` must return a value or a typed error;
//! a value it loads must dump again (nothing read is unwritable), and the
//! dump must load back to the same value, also when its strings are cut
//! into pieces (with a threshold short enough for fuzzed inputs) and the
//! pieces are joined back. The bytes read as a skeleton join or fail with
//! a typed error. The same bytes are also read as
//! the JSON documents the backends store next to blobs: a checkpoint, its
//! metadata, a pending write, a checkpoint address and a channel version;
//! each that reads must write and read back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::HashMap;

use stategraph_checkpoint::pieces::{self, PieceId, Stored};
use stategraph_checkpoint::serde::{JsonSerializer, Serializer};
use stategraph_checkpoint::{
    ChannelVersion, Checkpoint, CheckpointConfig, CheckpointMetadata, PendingWrite,
};

fuzz_target!(|input: &[u8]| {
    let (tag, bytes) = match input.iter().position(|byte| *byte == 0) {
        Some(at) => (stategraph_fuzz::text(&input[..at]), &input[at + 1..]),
        None => (JsonSerializer::TAG.to_owned(), input),
    };
    if let Ok(value) = JsonSerializer.loads("fuzz", &tag, bytes) {
        let encoded = JsonSerializer
            .dumps("fuzz", &value)
            .unwrap_or_else(|err| panic!("a loaded value does not dump: {err}"));
        let again = JsonSerializer
            .loads("fuzz", &encoded.tag, &encoded.bytes)
            .unwrap_or_else(|err| panic!("a dumped value does not load: {err}"));
        assert_eq!(again, value, "a value changed through dumps and loads");
        let stored = Stored::with_min_piece(encoded.clone(), 8);
        let table: HashMap<PieceId, &[u8]> = stored.pieces().map(|(id, b)| (*id, b)).collect();
        let joined = pieces::join(stored.bytes(), |id| Ok(table.get(&id).copied()))
            .expect("the lookup never fails")
            .unwrap_or_else(|err| panic!("a skeleton does not join: {err}"));
        assert_eq!(joined, encoded.bytes, "a value changed through its pieces");
    }
    let ids: Vec<PieceId> = pieces::references(bytes).collect();
    let _ = pieces::join(bytes, |id| Ok(ids.contains(&id).then_some(b"\"x\"")));
    round_trip::<Checkpoint>(bytes);
    round_trip::<CheckpointMetadata>(bytes);
    round_trip::<PendingWrite>(bytes);
    round_trip::<CheckpointConfig>(bytes);
    round_trip::<ChannelVersion>(bytes);
    if let Ok(metadata) = serde_json::from_slice::<CheckpointMetadata>(bytes) {
        // What every saver applies on `put`, and what filters match.
        let clean = metadata.sanitized();
        let json = clean.to_json();
        let back: CheckpointMetadata = serde_json::from_value(json.clone())
            .unwrap_or_else(|err| panic!("sanitized metadata does not read back: {err}"));
        assert_eq!(back.to_json(), json);
    }
});

/// A `T` read from `bytes`, if any, must write and read back equal.
fn round_trip<T>(bytes: &[u8])
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let Ok(value) = serde_json::from_slice::<T>(bytes) else {
        return;
    };
    let text = serde_json::to_vec(&value).unwrap_or_else(|err| {
        panic!(
            "a {} that reads does not write: {err}",
            std::any::type_name::<T>()
        )
    });
    let back: T = serde_json::from_slice(&text).unwrap_or_else(|err| {
        panic!(
            "a written {} does not read back: {err}",
            std::any::type_name::<T>()
        )
    });
    assert_eq!(
        back,
        value,
        "{} changed through JSON",
        std::any::type_name::<T>()
    );
}
