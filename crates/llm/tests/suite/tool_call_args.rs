//! How tool-call argument text becomes a tool call or an invalid tool call:
//! the table checked against langchain-openai's `parse_tool_call`
//! (`json.loads(arguments, strict=False)`, then `args or {}`), run on
//! langchain-core 1.8.3 / langchain-openai 1.7.4. Every row goes through
//! both ways a model's reply arrives: a whole OpenAI message, and tool-call
//! chunks of a stream merged into one message.

use serde_json::{Value as Json, json};
use stategraph_llm::{AiMessage, AiMessageChunk, Message, TOOL_ARGS_MAX_DEPTH, ToolCallChunk};

/// What LangChain makes of an argument text.
#[derive(Debug)]
enum Expect {
    /// A tool call with these arguments.
    Valid(Json),
    /// An invalid tool call whose error contains this text.
    Invalid(&'static str),
}

use Expect::{Invalid, Valid};

/// An object nested `depth` levels deep (the outer object is level 1).
fn nested(depth: usize) -> String {
    let mut text = "{\"a\":".repeat(depth - 1);
    text.push_str("{}");
    text.push_str(&"}".repeat(depth - 1));
    text
}

fn table() -> Vec<(&'static str, String, Expect)> {
    let s = |text: &str| text.to_owned();
    vec![
        ("empty text", s(""), Valid(json!({}))),
        ("only whitespace", s("   "), Invalid("not valid JSON")),
        ("an object", s(r#"{"a": 1}"#), Valid(json!({"a": 1}))),
        (
            "whitespace around",
            s("  {\"a\": 1}\n"),
            Valid(json!({"a": 1})),
        ),
        ("broken JSON", s("{broken"), Invalid("not valid JSON")),
        (
            "a list",
            s("[1,2]"),
            Invalid("must be a JSON object, got a list"),
        ),
        (
            "a number",
            s("3"),
            Invalid("must be a JSON object, got a number"),
        ),
        (
            "a string",
            s(r#""x""#),
            Invalid("must be a JSON object, got a string"),
        ),
        (
            "true",
            s("true"),
            Invalid("must be a JSON object, got a boolean"),
        ),
        ("null", s("null"), Valid(json!({}))),
        ("false", s("false"), Valid(json!({}))),
        ("zero", s("0"), Valid(json!({}))),
        ("negative zero", s("-0.0"), Valid(json!({}))),
        ("an underflowing zero", s("1e-400"), Valid(json!({}))),
        ("an empty string", s(r#""""#), Valid(json!({}))),
        ("an empty list", s("[]"), Valid(json!({}))),
        ("an empty object", s("{}"), Valid(json!({}))),
        (
            "raw control characters in a string",
            s("{\"a\": \"line1\nline2\ttab\u{0}\"}"),
            Valid(json!({"a": "line1\nline2\ttab\u{0}"})),
        ),
        (
            "a raw control character in a key",
            s("{\"a\tb\": 1}"),
            Valid(json!({"a\tb": 1})),
        ),
        (
            "escaped control characters",
            s(r#"{"a": "\u0001"}"#),
            Valid(json!({"a": "\u{1}"})),
        ),
        (
            "a raw newline after a backslash",
            s("{\"a\": \"x\\\ny\"}"),
            Invalid("not valid JSON"),
        ),
        (
            "a control character outside strings",
            s("{\u{1}\"a\": 1}"),
            Invalid("not valid JSON"),
        ),
        (
            "trailing garbage",
            s(r#"{"a": 1} xyz"#),
            Invalid("not valid JSON"),
        ),
        (
            "two objects",
            s(r#"{"a": 1}{"b": 2}"#),
            Invalid("not valid JSON"),
        ),
        ("cut short", s(r#"{"a": "hel"#), Invalid("not valid JSON")),
        ("single quotes", s("{'a': 1}"), Invalid("not valid JSON")),
        (
            "a trailing comma",
            s(r#"{"a": 1,}"#),
            Invalid("not valid JSON"),
        ),
        (
            "a byte-order mark",
            s("\u{feff}{\"a\": 1}"),
            Invalid("not valid JSON"),
        ),
        (
            "a markdown fence",
            s("```json\n{\"a\": 1}\n```"),
            Invalid("not valid JSON"),
        ),
        (
            "a repeated key",
            s(r#"{"a": 1, "a": 2}"#),
            Valid(json!({"a": 2})),
        ),
        (
            "a surrogate pair",
            s(r#"{"a": "\ud83d\ude00"}"#),
            Valid(json!({"a": "\u{1f600}"})),
        ),
        (
            "a big integer",
            s(r#"{"a": 123456789012345678901234567890}"#),
            Valid(json!({"a": 1.2345678901234568e29})),
        ),
        // Python reads these four; no JSON value (and no Rust string) can
        // hold them, and no provider would accept them back.
        ("NaN", s(r#"{"a": NaN}"#), Invalid("not valid JSON")),
        (
            "Infinity",
            s(r#"{"a": -Infinity}"#),
            Invalid("not valid JSON"),
        ),
        (
            "an overflowing number",
            s(r#"{"a": 1e400}"#),
            Invalid("not valid JSON"),
        ),
        (
            "a lone surrogate",
            s(r#"{"a": "\ud800"}"#),
            Invalid("not valid JSON"),
        ),
        (
            "20 MB of garbage",
            "x".repeat(20 << 20),
            Invalid("not valid JSON"),
        ),
        (
            "nesting at the limit",
            nested(TOOL_ARGS_MAX_DEPTH),
            Valid(serde_json::from_str(&nested(TOOL_ARGS_MAX_DEPTH)).unwrap()),
        ),
        (
            "nesting past the limit",
            nested(TOOL_ARGS_MAX_DEPTH + 1),
            Invalid("nest deeper than 100 levels"),
        ),
        (
            "100,000 levels of lists",
            format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
            Invalid("nest deeper than 100 levels"),
        ),
        (
            "100,000 unclosed objects",
            "{\"a\":".repeat(100_000),
            Invalid("nest deeper than 100 levels"),
        ),
        (
            "brackets inside strings do not nest",
            format!("{{\"a\": \"{}\"}}", "[".repeat(100_000)),
            Valid(json!({"a": "[".repeat(100_000)})),
        ),
    ]
}

/// The reply as OpenAI's chat completions API sends it.
fn from_openai(raw: &str) -> AiMessage {
    let reply = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": raw}},
    ]});
    match Message::from_json(reply).unwrap() {
        Message::Ai(ai) => (*ai).clone(),
        other => panic!("not an AI message: {other:?}"),
    }
}

/// The reply as a stream sends it: the name first, then the argument text
/// in two pieces.
fn from_stream(raw: &str) -> AiMessage {
    let cut = raw
        .char_indices()
        .nth(raw.chars().count() / 2)
        .map_or(0, |(at, _)| at);
    let mut message = AiMessageChunk::default()
        .with_tool_call_chunk(ToolCallChunk::new(0).with_id("c1").with_name("f"));
    for piece in [&raw[..cut], &raw[cut..]] {
        message.merge(
            AiMessageChunk::default().with_tool_call_chunk(ToolCallChunk::new(0).with_args(piece)),
        );
    }
    message.into_message()
}

fn check(way: &str, label: &str, raw: &str, expect: &Expect, message: &AiMessage) {
    match expect {
        Valid(args) => {
            assert!(
                message.invalid_tool_calls.is_empty(),
                "{way}, {label}: {:?}",
                message.invalid_tool_calls[0].error
            );
            assert_eq!(message.tool_calls.len(), 1, "{way}, {label}");
            assert_eq!(&message.tool_calls[0].args, args, "{way}, {label}");
            assert_eq!(message.tool_calls[0].id.as_deref(), Some("c1"));
        }
        Invalid(why) => {
            assert!(message.tool_calls.is_empty(), "{way}, {label}: valid");
            let [invalid] = &message.invalid_tool_calls[..] else {
                panic!("{way}, {label}: {message:?}");
            };
            let error = invalid.error.as_deref().unwrap_or_default();
            assert!(error.contains(why), "{way}, {label}: {error}");
            assert!(error.starts_with("arguments of `f` "), "{error}");
            assert!(error.len() < 200, "{way}, {label}: a short error");
            assert_eq!(invalid.id.as_deref(), Some("c1"));
            assert_eq!(invalid.name.as_deref(), Some("f"));
            assert_eq!(
                invalid.args.as_deref(),
                Some(raw),
                "{way}, {label}: raw text kept"
            );
        }
    }
}

#[test]
fn argument_text_parses_as_leniently_as_langchain() {
    for (label, raw, expect) in table() {
        check("whole reply", label, &raw, &expect, &from_openai(&raw));
        check("stream", label, &raw, &expect, &from_stream(&raw));
    }
}

#[test]
fn arguments_given_as_values_follow_langchain() {
    let reply = |function: Json| {
        let reply = json!({"role": "assistant", "content": null,
                           "tool_calls": [{"id": "c1", "type": "function", "function": function}]});
        match Message::from_json(reply).unwrap() {
            Message::Ai(ai) => (*ai).clone(),
            other => panic!("not an AI message: {other:?}"),
        }
    };
    // `arguments: null` is a call without arguments, as in Python.
    let ai = reply(json!({"name": "f", "arguments": null}));
    assert_eq!(ai.tool_calls[0].args, json!({}));
    // No `arguments` at all fails the whole message in LangChain; here the
    // one call is invalid.
    let ai = reply(json!({"name": "f"}));
    let error = ai.invalid_tool_calls[0].error.as_deref().unwrap();
    assert_eq!(error, "tool call of `f` has no `arguments`");
    // An object is taken as it is (langchain-core's `convert_to_messages`).
    let ai = reply(json!({"name": "f", "arguments": {"a": 1}}));
    assert_eq!(ai.tool_calls[0].args, json!({"a": 1}));
    let ai = reply(json!({"name": "f", "arguments": [1, 2]}));
    assert!(ai.tool_calls.is_empty());
    assert_eq!(ai.invalid_tool_calls[0].args.as_deref(), Some("[1,2]"));
}

/// 100,000 levels of nesting cost one scan, not the stack: parsed on a
/// thread with a small stack (a tokio worker has 2 MiB).
#[test]
fn deep_nesting_is_refused_without_recursion() {
    let handle = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(|| {
            let raw = "[".repeat(100_000);
            let ai = from_openai(&raw);
            let stream = from_stream(&raw);
            (ai, stream)
        })
        .unwrap();
    let (ai, stream) = handle.join().unwrap();
    for message in [ai, stream] {
        assert!(message.tool_calls.is_empty());
        let error = message.invalid_tool_calls[0].error.as_deref().unwrap();
        assert!(error.contains("nest deeper than"), "{error}");
    }
}
