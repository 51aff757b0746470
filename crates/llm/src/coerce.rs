//! Reading messages from the JSON shapes LangChain's `convert_to_messages`
//! accepts, plus OpenAI's chat shapes.

use std::borrow::Cow;

use serde_json::Value as Json;
use stategraph_core::JsonMap;

use crate::message::{
    AiMessage, Content, ContentBlock, HumanMessage, InvalidToolCall, Message, RemoveMessage,
    SystemMessage, ToolCall, ToolMessage, ToolStatus, UsageMetadata,
};
use crate::{Error, Result};

/// The message kinds a role, a type or a class name maps to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    System,
    Developer,
    Human,
    Ai,
    Tool,
    Remove,
}

const ROLES: &str = "human, user, ai, assistant, system, developer, tool or remove";

/// Keys that describe the shape rather than the message; never kept as extra
/// fields.
const SHAPE_KEYS: &[&str] = &[
    "type",
    "role",
    "example",
    "chunk_position",
    "tool_call_chunks",
    "lc",
    "$msg",
];

/// Reads a list of messages, or a single message as a list of one (what
/// `add_messages` accepts on either side in LangGraph). A JSON list is always
/// a list of messages, as a Python list is: `["user", "hi"]` is two human
/// messages, and a `[role, content]` pair must sit inside a list.
///
/// # Errors
/// [`Error::InvalidMessage`] naming the index of the bad entry.
pub fn convert_to_messages(value: Json) -> Result<Vec<Message>> {
    match value {
        Json::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| {
                message_inner(item).map_err(|e| Error::invalid_message(format!("[{i}]: {e}")))
            })
            .collect(),
        other => Ok(vec![message(other)?]),
    }
}

pub(crate) fn message(value: Json) -> Result<Message> {
    message_inner(value).map_err(Error::invalid_message)
}

fn message_inner(value: Json) -> Result<Message, String> {
    match value {
        Json::String(text) => Ok(Message::human(text)),
        Json::Array(mut items) if items.len() == 2 && items[0].is_string() => {
            let content = items.pop().unwrap_or_default();
            let role = items.pop().unwrap_or_default();
            let mut map = JsonMap::new();
            map.insert("role".into(), role);
            map.insert("content".into(), content);
            from_map(map)
        }
        Json::Object(map) => from_map(map),
        other => Err(format!(
            "expected a message, a string, a [role, content] pair or a dict, got {}",
            describe(&other)
        )),
    }
}

fn kind(name: &str) -> Option<Kind> {
    Some(match name {
        "human" | "user" | "HumanMessage" | "HumanMessageChunk" => Kind::Human,
        "ai" | "assistant" | "AIMessage" | "AIMessageChunk" => Kind::Ai,
        "system" | "SystemMessage" | "SystemMessageChunk" => Kind::System,
        "developer" => Kind::Developer,
        "tool" | "ToolMessage" | "ToolMessageChunk" => Kind::Tool,
        "remove" | "RemoveMessage" => Kind::Remove,
        _ => return None,
    })
}

fn from_map(mut map: JsonMap) -> Result<Message, String> {
    // LangChain's `dumpd` form: {"lc": 1, "type": "constructor", "id": [..., "HumanMessage"], "kwargs": {...}}.
    if map.get("lc").is_some() && map.get("type").and_then(Json::as_str) == Some("constructor") {
        let class = map
            .get("id")
            .and_then(Json::as_array)
            .and_then(|path| path.last())
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_owned();
        let kwargs = match map.remove("kwargs") {
            Some(Json::Object(kwargs)) => kwargs,
            Some(other) => {
                return Err(format!("`kwargs` must be a dict, got {}", describe(&other)));
            }
            None => JsonMap::new(),
        };
        return build(lookup(&class)?, kwargs);
    }
    // The golden traces' form: {"$msg": "HumanMessage", ...}.
    if let Some(class) = map.remove("$msg") {
        let class = class
            .as_str()
            .ok_or_else(|| format!("`$msg` must be a class name, got {}", describe(&class)))?;
        return build(lookup(class)?, map);
    }
    // LangChain's `messages_to_dict` form: {"type": "human", "data": {...}}.
    if !map.contains_key("content")
        && !map.contains_key("role")
        && let (Some(Json::String(kind_name)), Some(Json::Object(_))) =
            (map.get("type"), map.get("data"))
    {
        let kind = lookup(kind_name)?;
        let Some(Json::Object(data)) = map.remove("data") else {
            unreachable!("checked to be an object just above")
        };
        return build(kind, data);
    }
    let role = match (map.get("role"), map.get("type")) {
        (Some(role), _) => role,
        (None, Some(kind)) => kind,
        (None, None) => {
            return Err(format!(
                "a message dict needs a `role` or `type` key ({ROLES}); got keys [{}]",
                map.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    };
    let role = role
        .as_str()
        .ok_or_else(|| format!("the message role must be a string, got {}", describe(role)))?;
    let kind = lookup(role)?;
    build(kind, map)
}

fn lookup(name: &str) -> Result<Kind, String> {
    kind(name).ok_or_else(|| format!("unknown message role {name:?}; expected {ROLES}"))
}

fn build(kind: Kind, mut map: JsonMap) -> Result<Message, String> {
    if kind == Kind::Remove {
        let id = match map.remove("id") {
            Some(Json::String(id)) => id,
            other => {
                return Err(format!(
                    "a remove message needs a string `id`, got {}",
                    other.as_ref().map_or("nothing", describe)
                ));
            }
        };
        return Ok(RemoveMessage::new(id).into());
    }
    let content = match map.remove("content") {
        None | Some(Json::Null) => Content::default(),
        Some(value) => content(value)?,
    };
    let id = optional_string(&mut map, "id")?;
    let name = optional_string(&mut map, "name")?;
    let mut additional_kwargs = match map.remove("additional_kwargs") {
        None | Some(Json::Null) => JsonMap::new(),
        Some(Json::Object(kwargs)) => kwargs,
        Some(other) => {
            return Err(format!(
                "`additional_kwargs` must be a dict, got {}",
                describe(&other)
            ));
        }
    };
    let response_metadata = match map.remove("response_metadata") {
        None | Some(Json::Null) => JsonMap::new(),
        Some(Json::Object(metadata)) => metadata,
        Some(other) => {
            return Err(format!(
                "`response_metadata` must be a dict, got {}",
                describe(&other)
            ));
        }
    };
    let message: Message = match kind {
        Kind::System | Kind::Developer => {
            if kind == Kind::Developer {
                // LangChain marks OpenAI's developer role this way.
                additional_kwargs.insert("__openai_role__".into(), "developer".into());
            }
            let mut m = SystemMessage::new(content);
            m.id = id;
            m.name = name;
            m.additional_kwargs = take_extra(map, additional_kwargs);
            m.into()
        }
        Kind::Human => {
            let mut m = HumanMessage::new(content);
            m.id = id;
            m.name = name;
            m.additional_kwargs = take_extra(map, additional_kwargs);
            m.into()
        }
        Kind::Ai => {
            let mut m = AiMessage::new(content);
            m.id = id;
            m.name = name;
            m.response_metadata = response_metadata;
            let mut from_chunks = false;
            match map.remove("tool_calls") {
                None | Some(Json::Null) => from_chunks = true,
                Some(Json::Array(calls)) => {
                    for call in calls {
                        match tool_call(call)? {
                            Ok(call) => m.tool_calls.push(call),
                            Err(invalid) => m.invalid_tool_calls.push(invalid),
                        }
                    }
                }
                Some(other) => {
                    return Err(format!(
                        "`tool_calls` must be a list, got {}",
                        describe(&other)
                    ));
                }
            }
            match map.remove("invalid_tool_calls") {
                None | Some(Json::Null) => {}
                Some(Json::Array(calls)) => {
                    for call in calls {
                        m.invalid_tool_calls.push(invalid_tool_call(call)?);
                    }
                }
                Some(other) => {
                    return Err(format!(
                        "`invalid_tool_calls` must be a list, got {}",
                        describe(&other)
                    ));
                }
            }
            if from_chunks && let Some(Json::Array(chunks)) = map.get("tool_call_chunks") {
                let chunks = chunks
                    .iter()
                    .cloned()
                    .map(serde_json::from_value)
                    .collect::<Result<Vec<crate::ToolCallChunk>, _>>()
                    .map_err(|e| format!("bad `tool_call_chunks`: {e}"))?;
                let (calls, invalid) = crate::chunk::parse_tool_call_chunks(chunks);
                m.tool_calls = calls;
                m.invalid_tool_calls.extend(invalid);
            }
            match map.remove("usage_metadata") {
                None | Some(Json::Null) => {}
                Some(usage) => {
                    m.usage_metadata = Some(
                        serde_json::from_value::<UsageMetadata>(usage)
                            .map_err(|e| format!("bad `usage_metadata`: {e}"))?,
                    );
                }
            }
            m.additional_kwargs = take_extra(map, additional_kwargs);
            m.into()
        }
        Kind::Tool => {
            let tool_call_id = match map.remove("tool_call_id") {
                Some(Json::String(id)) => id,
                other => {
                    return Err(format!(
                        "a tool message needs a string `tool_call_id`, got {}",
                        other.as_ref().map_or("nothing", describe)
                    ));
                }
            };
            let mut m = ToolMessage::new(content, tool_call_id);
            m.id = id;
            m.name = name;
            m.status = match map.remove("status") {
                None | Some(Json::Null) => ToolStatus::Success,
                Some(Json::String(s)) if s == "success" => ToolStatus::Success,
                Some(Json::String(s)) if s == "error" => ToolStatus::Error,
                Some(other) => {
                    return Err(format!(
                        "tool message `status` must be \"success\" or \"error\", got {other}"
                    ));
                }
            };
            m.artifact = match map.remove("artifact") {
                None | Some(Json::Null) => None,
                Some(artifact) => Some(artifact),
            };
            m.additional_kwargs = take_extra(map, additional_kwargs);
            m.into()
        }
        Kind::Remove => unreachable!("handled at the top"),
    };
    Ok(message)
}

/// Keys that are not message fields become extra fields, as LangChain does
/// with the extra keys of a role dict.
fn take_extra(map: JsonMap, mut kwargs: JsonMap) -> JsonMap {
    for (key, value) in map {
        if SHAPE_KEYS.contains(&key.as_str()) || value.is_null() {
            continue;
        }
        kwargs.entry(key).or_insert(value);
    }
    kwargs
}

fn optional_string(map: &mut JsonMap, key: &str) -> Result<Option<String>, String> {
    match map.remove(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!(
            "`{key}` must be a string, got {}",
            describe(&other)
        )),
    }
}

pub(crate) fn content(value: Json) -> Result<Content, String> {
    match value {
        Json::String(text) => Ok(Content::Text(text)),
        Json::Array(blocks) => Ok(Content::Blocks(
            blocks.into_iter().map(content_block).collect(),
        )),
        other => Err(format!(
            "`content` must be a string or a list of content blocks, got {}",
            describe(&other)
        )),
    }
}

pub(crate) fn content_block(value: Json) -> ContentBlock {
    match value {
        Json::String(text) => ContentBlock::Text(text),
        Json::Object(map)
            if map.len() == 2
                && map.get("type").and_then(Json::as_str) == Some("text")
                && map.get("text").is_some_and(Json::is_string) =>
        {
            match map.into_iter().find(|(k, _)| k == "text") {
                Some((_, Json::String(text))) => ContentBlock::Text(text),
                _ => unreachable!("checked to be a string just above"),
            }
        }
        other => ContentBlock::Other(other),
    }
}

/// A tool call in LangChain's shape (`{"name", "args", "id"}`) or OpenAI's
/// (`{"id", "type": "function", "function": {"name", "arguments"}}`).
/// Arguments that do not parse to a JSON object (see [`parse_args`]) give an
/// [`InvalidToolCall`], as does an OpenAI call without `arguments` (LangChain
/// fails the whole message there); only a value that is not a tool call at
/// all is an error.
pub(crate) fn tool_call(value: Json) -> Result<Result<ToolCall, InvalidToolCall>, String> {
    let Json::Object(mut map) = value else {
        return Err(format!(
            "a tool call must be a dict, got {}",
            describe(&value)
        ));
    };
    let id = optional_string(&mut map, "id")?;
    let (name, args) = match map.remove("function") {
        Some(Json::Object(mut function)) => (function.remove("name"), function.remove("arguments")),
        Some(other) => {
            return Err(format!(
                "a tool call's `function` must be a dict, got {}",
                describe(&other)
            ));
        }
        // LangChain's shape: no `args` is a call without arguments.
        None => (
            map.remove("name"),
            Some(map.remove("args").unwrap_or(Json::Null)),
        ),
    };
    let name = match name {
        Some(Json::String(name)) => name,
        other => {
            let raw = match args {
                Some(Json::String(text)) => text,
                None | Some(Json::Null) => String::new(),
                Some(value) => value.to_string(),
            };
            let error = format!(
                "tool call has no name (got {})",
                other.as_ref().map_or("nothing", describe)
            );
            return Ok(Err(InvalidToolCall::new(id, None, Some(raw), error)));
        }
    };
    Ok(match args {
        None => {
            let error = format!("tool call of `{name}` has no `arguments`");
            Err(InvalidToolCall::new(id, Some(name), None, error))
        }
        Some(Json::Null) => Ok(ToolCall {
            id,
            name,
            args: Json::Object(JsonMap::new()),
        }),
        Some(Json::Object(args)) => Ok(ToolCall {
            id,
            name,
            args: Json::Object(args),
        }),
        Some(Json::String(raw)) => parse_args(id, name, raw),
        Some(other) => Err(InvalidToolCall::new(
            id,
            Some(name.clone()),
            Some(other.to_string()),
            format!(
                "arguments of `{name}` must be a JSON object, got {}",
                describe(&other)
            ),
        )),
    })
}

/// Parses tool-call arguments given as JSON text exactly as leniently as
/// langchain-openai's `parse_tool_call` (`json.loads(text, strict=False)`,
/// then `args or {}`), and no more:
///
/// - empty text is `{}` (a tool without parameters); text of only
///   whitespace is not JSON;
/// - control characters (U+0000 to U+001F) may stand unescaped inside
///   strings (`strict=False`);
/// - a value Python counts as false (`null`, `false`, `0`, `""`, `[]`) is
///   `{}`; any other value that is not an object gives an
///   [`InvalidToolCall`] (LangChain fails the whole message there);
/// - text that is not JSON, text nested deeper than
///   [`TOOL_ARGS_MAX_DEPTH`](crate::TOOL_ARGS_MAX_DEPTH) levels, and numbers
///   or strings no JSON value can hold (`NaN`, `Infinity`, `1e400`, a lone
///   surrogate escape, which Python reads) give an [`InvalidToolCall`]
///   keeping the raw text.
///
/// Runs in linear time and constant stack, whatever the text.
pub(crate) fn parse_args(
    id: Option<String>,
    name: String,
    raw: String,
) -> Result<ToolCall, InvalidToolCall> {
    match parse_args_text(&raw) {
        Ok(args) => Ok(ToolCall {
            id,
            name,
            args: Json::Object(args),
        }),
        Err(why) => {
            let error = format!("arguments of `{name}` {why}");
            Err(InvalidToolCall::new(id, Some(name), Some(raw), error))
        }
    }
}

/// The arguments object of `raw`, or why there is none (the end of a
/// sentence starting with "arguments of `name`").
fn parse_args_text(raw: &str) -> Result<JsonMap, String> {
    if raw.is_empty() {
        return Ok(JsonMap::new());
    }
    let text = loosen(raw)?;
    match serde_json::from_str::<Json>(&text) {
        Ok(Json::Object(args)) => Ok(args),
        Ok(value) if is_falsy(&value) => Ok(JsonMap::new()),
        Ok(value) => Err(format!("must be a JSON object, got {}", describe(&value))),
        Err(err) => Err(format!("are not valid JSON: {err}")),
    }
}

/// `raw` with each control character inside a string escaped, so a strict
/// parser reads what Python's `strict=False` reads; borrowed when there is
/// none.
///
/// # Errors
/// When brackets nest deeper than [`TOOL_ARGS_MAX_DEPTH`](crate::TOOL_ARGS_MAX_DEPTH),
/// found before anything recursive sees the text.
fn loosen(raw: &str) -> Result<Cow<'_, str>, String> {
    let bytes = raw.as_bytes();
    let mut depth = 0_usize;
    let mut in_string = false;
    let mut escaped = false;
    // Where the first control character inside a string is, if any.
    let mut first_control = None;
    for (at, &byte) in bytes.iter().enumerate() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                0x00..=0x1f if first_control.is_none() => first_control = Some(at),
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > crate::TOOL_ARGS_MAX_DEPTH {
                    return Err(format!(
                        "nest deeper than {} levels",
                        crate::TOOL_ARGS_MAX_DEPTH
                    ));
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    let Some(first) = first_control else {
        return Ok(Cow::Borrowed(raw));
    };
    // Every byte up to the first control character is copied as is; the
    // scan then restarts inside that same string.
    let mut out = String::with_capacity(raw.len() + 8);
    out.push_str(&raw[..first]);
    let mut in_string = true;
    let mut escaped = false;
    for ch in raw[first..].chars() {
        if in_string {
            match ch {
                // After a backslash a control character stays raw: an
                // invalid escape for Python too.
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                '\u{0}'..='\u{1f}' => {
                    out.push_str(&format!("\\u{:04x}", u32::from(ch)));
                    continue;
                }
                _ => {}
            }
        } else if ch == '"' {
            in_string = true;
        }
        out.push(ch);
    }
    Ok(Cow::Owned(out))
}

/// Whether Python counts the value as false (what `args or {}` replaces).
fn is_falsy(value: &Json) -> bool {
    match value {
        Json::Null => true,
        Json::Bool(b) => !b,
        Json::Number(n) => n.as_f64() == Some(0.0),
        Json::String(s) => s.is_empty(),
        Json::Array(items) => items.is_empty(),
        Json::Object(map) => map.is_empty(),
    }
}

pub(crate) fn invalid_tool_call(value: Json) -> Result<InvalidToolCall, String> {
    let Json::Object(mut map) = value else {
        return Err(format!(
            "an invalid tool call must be a dict, got {}",
            describe(&value)
        ));
    };
    let args = match map.remove("args") {
        None | Some(Json::Null) => None,
        Some(Json::String(args)) => Some(args),
        Some(other) => Some(other.to_string()),
    };
    Ok(InvalidToolCall {
        id: optional_string(&mut map, "id")?,
        name: optional_string(&mut map, "name")?,
        args,
        error: optional_string(&mut map, "error")?,
    })
}

/// A short description of a JSON value for error messages.
pub(crate) fn describe(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "a dict",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn one(value: Json) -> Message {
        message(value).unwrap()
    }

    #[test]
    fn strings_and_pairs_follow_langchain() {
        assert_eq!(one(json!("hi")), Message::human("hi"));
        assert_eq!(one(json!(["user", "a"])), Message::human("a"));
        assert_eq!(one(json!(["assistant", "b"])), Message::ai("b"));
        assert_eq!(one(json!(["ai", "b"])), Message::ai("b"));
        assert_eq!(one(json!(["system", "c"])), Message::system("c"));
        let err = message(json!(["robot", "x"])).unwrap_err().to_string();
        assert!(err.contains("unknown message role \"robot\""), "{err}");
    }

    #[test]
    fn openai_dicts_parse_tool_call_arguments() {
        let m = one(json!({
            "role": "assistant",
            "content": null,
            "refusal": "no",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "add", "arguments": "{\"x\": 1}"}},
                {"id": "b", "type": "function", "function": {"name": "add", "arguments": "{\"x\": "}},
                {"id": "c", "type": "function", "function": {"name": "add", "arguments": "[1]"}},
                {"id": "d", "type": "function", "function": {"name": "now", "arguments": ""}},
            ],
        }));
        let ai = m.as_ai().unwrap();
        assert_eq!(ai.content, Content::default());
        assert_eq!(ai.additional_kwargs["refusal"], json!("no"));
        let ids: Vec<_> = ai.tool_calls.iter().map(|c| c.id.as_deref()).collect();
        assert_eq!(ids, [Some("a"), Some("d")]);
        assert_eq!(ai.tool_calls[1].args, json!({}));
        assert_eq!(ai.invalid_tool_calls.len(), 2);
        assert_eq!(ai.invalid_tool_calls[0].args.as_deref(), Some("{\"x\": "));
        let error = ai.invalid_tool_calls[0].error.as_deref().unwrap();
        assert!(error.contains("not valid JSON"), "{error}");
        let error = ai.invalid_tool_calls[1].error.as_deref().unwrap();
        assert!(error.contains("must be a JSON object"), "{error}");
    }

    #[test]
    fn langchain_dumps_and_trace_form_are_accepted() {
        let expected = Message::from(HumanMessage::new("yo").with_id("u1"));
        assert_eq!(
            one(json!({"type": "human", "content": "yo", "id": "u1", "example": false})),
            expected
        );
        assert_eq!(
            one(json!({"type": "human", "data": {"content": "yo", "id": "u1"}})),
            expected
        );
        assert_eq!(
            one(json!({"lc": 1, "type": "constructor",
                        "id": ["langchain", "schema", "messages", "HumanMessage"],
                        "kwargs": {"content": "yo", "id": "u1", "type": "human"}})),
            expected
        );
        assert_eq!(
            one(json!({"$msg": "HumanMessage", "content": "yo", "id": "u1"})),
            expected
        );
        assert_eq!(
            one(json!({"type": "remove", "id": "x"})),
            Message::remove("x")
        );
    }

    #[test]
    fn tool_messages_need_a_call_id() {
        let err = message(json!({"role": "tool", "content": "r"}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("tool_call_id"), "{err}");
        let m =
            one(json!({"role": "tool", "content": "r", "tool_call_id": "c", "status": "error"}));
        assert_eq!(m.as_tool().unwrap().status, ToolStatus::Error);
    }

    #[test]
    fn developer_role_is_a_marked_system_message() {
        let m = one(json!({"role": "developer", "content": "rules"}));
        assert_eq!(m.message_type(), "system");
        let Message::System(system) = &m else {
            unreachable!()
        };
        assert_eq!(
            system.additional_kwargs["__openai_role__"],
            json!("developer")
        );
    }

    #[test]
    fn bad_shapes_are_errors_not_panics() {
        for bad in [
            json!(3),
            json!(null),
            json!({"content": "no role"}),
            json!({"role": 3, "content": "x"}),
            json!({"role": "user", "content": 5}),
            json!({"role": "user", "content": "x", "id": 7}),
            json!({"role": "assistant", "content": "", "tool_calls": {}}),
            json!({"role": "assistant", "content": "", "tool_calls": [3]}),
            json!({"role": "assistant", "content": "", "usage_metadata": "lots"}),
            json!({"type": "remove"}),
            json!({"$msg": 1}),
        ] {
            assert!(message(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_tool_call_without_name_is_invalid_not_an_error() {
        let m = one(json!({"role": "assistant", "content": "",
                           "tool_calls": [{"id": "a", "args": {"x": 1}}]}));
        let ai = m.as_ai().unwrap();
        assert!(ai.tool_calls.is_empty());
        assert_eq!(ai.invalid_tool_calls[0].args.as_deref(), Some("{\"x\":1}"));
    }

    #[test]
    fn lists_and_single_messages_convert() {
        let list = convert_to_messages(json!(["a", ["ai", "b"]])).unwrap();
        assert_eq!(list, [Message::human("a"), Message::ai("b")]);
        let two = convert_to_messages(json!(["ai", "b"])).unwrap();
        assert_eq!(two, [Message::human("ai"), Message::human("b")]);
        let single = convert_to_messages(json!({"role": "user", "content": "c"})).unwrap();
        assert_eq!(single, [Message::human("c")]);
        let err = convert_to_messages(json!(["a", 3, "c"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("[1]"), "{err}");
    }
}
