//! `sse_line_16mb_4kb_reads`: one chat-completion event whose `data` line
//! is 16 MiB long (a 16 MiB `content` delta), then `data: [DONE]`, fed to
//! the OpenAI provider's server-sent event decoder in 4 KiB reads, as a
//! socket hands them over; the event is parsed as JSON as the provider
//! does. In process, no network. A decoder that searched its whole buffer
//! on every read took about a minute here (issue 21); a linear one takes
//! as long as copying and parsing the bytes once.

use serde_json::{Value as Json, json};
use stategraph_openai::SseDecoder;

use crate::{Outcome, Runner, Workload};

const CONTENT_BYTES: usize = 16 << 20;
const READ_BYTES: usize = 4096;
/// Caps above the line, so the workload measures reading, not refusing.
const LIMIT_BYTES: usize = 32 << 20;

pub(crate) fn workloads() -> Vec<Workload> {
    vec![Workload {
        name: "sse_line_16mb_4kb_reads",
        setup: line_16mb,
    }]
}

fn line_16mb() -> Runner {
    let event = json!({
        "id": "chatcmpl-bench",
        "choices": [{"index": 0, "delta": {"content": "x".repeat(CONTENT_BYTES)}}],
    });
    let stream = format!("data: {event}\n\ndata: [DONE]\n\n").into_bytes();
    Box::new(move || read_events(&stream))
}

/// Decodes `stream` in 4 KiB reads and parses each event up to `[DONE]`.
fn read_events(stream: &[u8]) -> Outcome {
    let mut decoder = SseDecoder::new(LIMIT_BYTES, LIMIT_BYTES);
    let mut events = 0;
    let mut content_bytes = 0;
    let mut done = false;
    let mut failure = None;
    'reads: for read in stream.chunks(READ_BYTES) {
        if let Err(err) = decoder.push(read) {
            failure = Some(err.to_string());
            break;
        }
        while let Some(data) = decoder.next_event() {
            if data.trim_ascii() == b"[DONE]" {
                done = true;
                break 'reads;
            }
            match serde_json::from_slice::<Json>(&data) {
                Ok(event) => {
                    events += 1;
                    content_bytes += event["choices"][0]["delta"]["content"]
                        .as_str()
                        .map_or(0, str::len);
                }
                Err(err) => {
                    failure = Some(err.to_string());
                    break 'reads;
                }
            }
        }
    }
    Outcome {
        chunks: events,
        check: json!({
            "events": events,
            "content_bytes": content_bytes,
            "done": done,
            "error": failure,
        })
        .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whole_line_is_read_as_one_event() {
        let outcome = line_16mb()();
        assert_eq!(outcome.chunks, 1);
        assert_eq!(
            outcome.check.resolve(),
            json!({"events": 1, "content_bytes": CONTENT_BYTES, "done": true, "error": null})
        );
    }
}
