//! Tool-call argument text and message coercion: what a model writes as a
//! tool call's arguments, and the message shapes input, state updates and
//! checkpoints hand to `convert_to_messages`.
//!
//! Input: `CUTS \x1f TEXT`, or just `TEXT`, where `CUTS` are piece
//! lengths, one byte each. `TEXT` (invalid UTF-8 replaced) is a tool call's
//! argument text: streamed in the pieces `CUTS` gives (`AiMessageChunk`s
//! merged as a streaming model's are) and whole (an OpenAI-shaped message
//! through `convert_to_messages`); both must give the same call, a valid
//! call's arguments must be an object, and an invalid one must keep the
//! text. Then, when `TEXT` is JSON, it is coerced to messages; those must
//! survive their own JSON unchanged and merge with `try_add_messages`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value as Json, json};
use stategraph_llm::{
    AiMessageChunk, Message, ToolCallChunk, convert_to_messages, try_add_messages,
};

fuzz_target!(|input: &[u8]| {
    let (cuts, text) = match input.iter().position(|byte| *byte == 0x1f) {
        Some(at) => (&input[..at], &input[at + 1..]),
        None => (&[][..], input),
    };
    let text = stategraph_fuzz::text(text);

    // Streamed: the first piece carries the id and the name, as OpenAI's do.
    let mut merged = AiMessageChunk::default();
    let mut rest = text.as_str();
    let mut first = true;
    for cut in cuts.iter().map(|cut| usize::from(*cut)).chain([usize::MAX]) {
        let mut at = cut.min(rest.len());
        while !rest.is_char_boundary(at) {
            at -= 1;
        }
        let (piece, tail) = rest.split_at(at);
        let mut chunk = ToolCallChunk::new(0).with_args(piece);
        if first {
            chunk = chunk.with_id("call-1").with_name("tool");
            first = false;
        }
        merged.merge(AiMessageChunk::default().with_tool_call_chunk(chunk));
        rest = tail;
        if rest.is_empty() {
            break;
        }
    }
    let streamed = merged.into_message();

    // Whole, in OpenAI's shape.
    let shaped = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "call-1", "type": "function", "function": {"name": "tool", "arguments": text}}
    ]});
    let whole = match convert_to_messages(shaped) {
        Ok(messages) => messages,
        Err(err) => panic!("an OpenAI-shaped tool call does not coerce: {err}"),
    };
    let [Message::Ai(whole)] = whole.as_slice() else {
        panic!("one assistant message coerces to {whole:?}");
    };
    assert_eq!(
        streamed.tool_calls, whole.tool_calls,
        "streamed and whole calls differ"
    );
    assert_eq!(
        streamed.invalid_tool_calls, whole.invalid_tool_calls,
        "streamed and whole invalid calls differ"
    );
    assert_eq!(
        streamed.tool_calls.len() + streamed.invalid_tool_calls.len(),
        1
    );
    for call in &streamed.tool_calls {
        assert!(call.args.is_object(), "valid arguments are an object");
    }
    for call in &streamed.invalid_tool_calls {
        assert_eq!(
            call.args.as_deref(),
            Some(text.as_str()),
            "the raw text is kept"
        );
    }

    // Coercion of any message shape.
    let Ok(value) = serde_json::from_str::<Json>(&text) else {
        return;
    };
    let Ok(messages) = convert_to_messages(value) else {
        return;
    };
    for message in &messages {
        let json = serde_json::to_value(message).expect("messages serialize");
        let back = Message::from_json(json.clone())
            .unwrap_or_else(|err| panic!("a message's JSON does not read back: {err}\n{json}"));
        assert_eq!(&back, message, "a message changed through its JSON");
    }
    if let Ok(merged) = try_add_messages(Vec::new(), messages.clone()) {
        // Every message now has an id; merging the update again replaces,
        // never grows, except for messages without an id.
        let again = try_add_messages(merged.clone(), merged.clone())
            .unwrap_or_else(|err| panic!("merging a history into itself fails: {err}"));
        assert_eq!(
            again.len(),
            merged.len(),
            "a history merged into itself grew"
        );
    }
});
