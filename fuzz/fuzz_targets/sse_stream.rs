//! A streamed chat completion as the server's bytes arrive.
//!
//! Input: two bytes of limits (line, event: `1 + byte * 4` bytes each),
//! a byte naming how many cut points follow, the cut points (one byte
//! each: the length of the next piece), then the stream. The stream is
//! decoded whole and in the pieces the cuts give; both must queue the same
//! events and agree on whether a limit broke (the decoder's promise:
//! "lines cut anywhere read the same"), no event may pass its limit, and
//! each event is then read as the client reads it (`[DONE]`, JSON within
//! the nesting limit, a chunk) and the chunks merged into a message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stategraph_llm::AiMessageChunk;
use stategraph_openai::fuzzing::{self, SseDecoder};

/// The events a decoder queues for `pieces`, then for the end of the
/// stream, and whether a limit broke first.
fn decode<'a>(
    max_line: usize,
    max_event: usize,
    pieces: impl IntoIterator<Item = &'a [u8]>,
) -> (Vec<Vec<u8>>, bool) {
    let mut decoder = SseDecoder::new(max_line, max_event);
    let mut events = Vec::new();
    let mut broke = false;
    for piece in pieces {
        if decoder.push(piece).is_err() {
            broke = true;
            break;
        }
        events.extend(std::iter::from_fn(|| decoder.next_event()));
    }
    if !broke {
        broke = decoder.finish().is_err();
    }
    events.extend(std::iter::from_fn(|| decoder.next_event()));
    (events, broke)
}

fuzz_target!(|input: &[u8]| {
    let [line, event, cuts, rest @ ..] = input else {
        return;
    };
    let max_line = 1 + usize::from(*line) * 4;
    let max_event = 1 + usize::from(*event) * 4;
    let cuts = usize::from(*cuts).min(rest.len());
    let (cuts, stream) = rest.split_at(cuts);

    let (whole, whole_broke) = decode(max_line, max_event, [stream]);
    let mut pieces = Vec::new();
    let mut left = stream;
    for cut in cuts {
        let (piece, tail) = left.split_at(usize::from(*cut).min(left.len()));
        pieces.push(piece);
        left = tail;
    }
    pieces.push(left);
    let (split, split_broke) = decode(max_line, max_event, pieces);
    assert_eq!(
        whole_broke, split_broke,
        "a limit broke in one reading only"
    );
    assert_eq!(whole, split, "cutting the stream changed its events");

    let mut merged: Option<AiMessageChunk> = None;
    for data in &whole {
        assert!(data.len() <= max_event, "an event passed its limit");
        let Some(read) = fuzzing::stream_event(data) else {
            break;
        };
        match read {
            Ok(Some(chunk)) => match &mut merged {
                Some(merged) => merged.merge(chunk),
                None => merged = Some(chunk),
            },
            Ok(None) => {}
            Err(_) => break,
        }
    }
    if let Some(merged) = merged {
        let _ = merged.tool_calls();
        let _ = merged.into_message();
    }
});
