//! The chat completions wire format: request bodies from messages and call
//! options, AI messages and chunks from responses.

use serde_json::{Value as Json, json};
use stategraph_core::JsonMap;
use stategraph_llm::{
    AiMessage, AiMessageChunk, CallOptions, Error, Message, Result, ToolCallChunk, ToolChoice,
    UsageMetadata,
};

use crate::OpenAiConfig;

pub(crate) const PROVIDER: &str = "openai";

/// The body of a `POST /chat/completions`.
pub(crate) fn chat_request(
    config: &OpenAiConfig,
    messages: &[Message],
    options: &CallOptions,
    stream: bool,
) -> Result<Json> {
    let mut body = JsonMap::new();
    body.insert("model".into(), config.model().into());
    let messages: Vec<Json> = messages.iter().map(message_json).collect::<Result<_>>()?;
    body.insert("messages".into(), messages.into());
    if !options.tools.is_empty() {
        let tools: Vec<Json> = options
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": without_titles(&tool.parameters, false),
                }})
            })
            .collect();
        body.insert("tools".into(), tools.into());
    }
    if let Some(choice) = &options.tool_choice {
        let choice = match choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
            other => {
                return Err(Error::Unsupported {
                    operation: format!("tool choice {other:?}"),
                    by: PROVIDER.into(),
                });
            }
        };
        body.insert("tool_choice".into(), choice);
    }
    if let Some(format) = &options.response_format {
        let mut schema = JsonMap::new();
        schema.insert("name".into(), format.name.clone().into());
        if let Some(description) = &format.description {
            schema.insert("description".into(), description.clone().into());
        }
        schema.insert("schema".into(), format.schema.clone());
        schema.insert("strict".into(), format.strict.into());
        body.insert(
            "response_format".into(),
            json!({"type": "json_schema", "json_schema": schema}),
        );
    }
    if !options.stop.is_empty() {
        body.insert("stop".into(), options.stop.clone().into());
    }
    if stream {
        body.insert("stream".into(), true.into());
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    for (key, value) in config.params() {
        body.entry(key.clone()).or_insert_with(|| value.clone());
    }
    Ok(Json::Object(body))
}

/// A message as an OpenAI role dict.
fn message_json(message: &Message) -> Result<Json> {
    let mut out = JsonMap::new();
    let (role, name) = match message {
        Message::System(m) => {
            // A `developer` message read from OpenAI input goes back as one.
            let role = m
                .additional_kwargs
                .get("__openai_role__")
                .and_then(Json::as_str)
                .unwrap_or("system");
            (role.to_owned(), m.name.clone())
        }
        Message::Human(m) => ("user".to_owned(), m.name.clone()),
        Message::Ai(m) => ("assistant".to_owned(), m.name.clone()),
        Message::Tool(m) => {
            out.insert("tool_call_id".into(), m.tool_call_id.clone().into());
            ("tool".to_owned(), None)
        }
        Message::Remove(m) => {
            return Err(Error::InvalidMessage {
                message: format!(
                    "a remove marker (id `{}`) cannot be sent to a model; merge the messages with add_messages first",
                    m.id
                ),
            });
        }
        other => {
            return Err(Error::InvalidMessage {
                message: format!(
                    "a `{}` message cannot be sent to a model",
                    other.message_type()
                ),
            });
        }
    };
    out.insert("role".into(), role.into());
    let content = serde_json::to_value(message.content()).map_err(|err| Error::InvalidMessage {
        message: err.to_string(),
    })?;
    if let Some(name) = name {
        out.insert("name".into(), name.into());
    }
    if let Message::Ai(ai) = message {
        let mut calls: Vec<Json> = ai
            .tool_calls
            .iter()
            .map(|call| {
                json!({"id": call.id, "type": "function", "function": {
                    "name": call.name,
                    "arguments": call.args.to_string(),
                }})
            })
            .collect();
        // Broken calls go back as they came, so their tool results match.
        calls.extend(ai.invalid_tool_calls.iter().map(|call| {
            json!({"id": call.id, "type": "function", "function": {
                "name": call.name.clone().unwrap_or_default(),
                "arguments": call.args.clone().unwrap_or_default(),
            }})
        }));
        let empty = message.content().is_empty();
        out.insert(
            "content".into(),
            if empty && !calls.is_empty() {
                Json::Null
            } else {
                content
            },
        );
        if !calls.is_empty() {
            out.insert("tool_calls".into(), calls.into());
        }
    } else {
        out.insert("content".into(), content);
    }
    Ok(Json::Object(out))
}

/// The AI message of a chat completion response.
pub(crate) fn chat_response(body: Json, model: &str) -> Result<AiMessage> {
    let choice = body
        .get("choices")
        .and_then(Json::as_array)
        .and_then(|choices| choices.first())
        .ok_or_else(|| Error::EmptyResponse {
            model: model.to_owned(),
        })?;
    let Some(reply) = choice.get("message").filter(|m| m.is_object()) else {
        return Err(malformed(format!("choice without a message: {choice}")));
    };
    let mut reply = reply.clone();
    if let Some(object) = reply.as_object_mut() {
        object.entry("role").or_insert_with(|| "assistant".into());
    }
    let mut message = match serde_json::from_value::<Message>(reply) {
        Ok(Message::Ai(message)) => std::sync::Arc::unwrap_or_clone(message),
        Ok(other) => {
            return Err(malformed(format!(
                "the reply is a `{}` message, not an assistant one",
                other.message_type()
            )));
        }
        Err(err) => return Err(malformed(format!("unreadable reply: {err}"))),
    };
    if let Some(refusal) = choice
        .pointer("/message/refusal")
        .and_then(Json::as_str)
        .filter(|r| !r.is_empty())
    {
        message
            .additional_kwargs
            .insert("refusal".into(), refusal.into());
    }
    message.id = body.get("id").and_then(Json::as_str).map(str::to_owned);
    message.usage_metadata = body.get("usage").and_then(usage);
    message.response_metadata = response_metadata(&body, choice);
    Ok(message)
}

/// A streamed completion event as a chunk; `None` for an event that carries
/// nothing (a role-only delta).
pub(crate) fn stream_chunk(event: &Json) -> Result<Option<AiMessageChunk>> {
    if let Some(error) = event.get("error") {
        return Err(Error::Provider {
            provider: PROVIDER.into(),
            status: None,
            message: error_text(error),
            source: None,
        });
    }
    let mut chunk = AiMessageChunk::default();
    chunk.id = event.get("id").and_then(Json::as_str).map(str::to_owned);
    let mut carries = false;
    let choice = event
        .get("choices")
        .and_then(Json::as_array)
        .and_then(|choices| choices.first());
    if let Some(choice) = choice {
        let delta = choice.get("delta").unwrap_or(&Json::Null);
        if let Some(text) = delta.get("content").and_then(Json::as_str) {
            chunk.content = text.into();
            carries |= !text.is_empty();
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Json::as_array) {
            for (position, call) in calls.iter().enumerate() {
                chunk
                    .tool_call_chunks
                    .push(tool_call_chunk(call, position)?);
            }
            carries |= !calls.is_empty();
        }
        if choice.get("finish_reason").is_some_and(|r| !r.is_null()) {
            chunk.response_metadata = response_metadata(event, choice);
            carries = true;
        }
    }
    if let Some(usage) = event.get("usage").and_then(usage) {
        chunk.usage_metadata = Some(usage);
        carries = true;
    }
    Ok(carries.then_some(chunk))
}

fn tool_call_chunk(call: &Json, position: usize) -> Result<ToolCallChunk> {
    let index = match call.get("index") {
        None | Some(Json::Null) => position,
        Some(index) => index
            .as_u64()
            .and_then(|i| usize::try_from(i).ok())
            .ok_or_else(|| malformed(format!("tool call delta with index {index}")))?,
    };
    let mut chunk = ToolCallChunk::new(index);
    let text = |pointer: &str| {
        call.pointer(pointer)
            .and_then(Json::as_str)
            .map(str::to_owned)
    };
    chunk.id = text("/id");
    chunk.name = text("/function/name");
    chunk.args = text("/function/arguments");
    Ok(chunk)
}

fn usage(usage: &Json) -> Option<UsageMetadata> {
    let count = |key: &str| usage.get(key).and_then(Json::as_u64);
    let input = count("prompt_tokens")?;
    let output = count("completion_tokens").unwrap_or(0);
    let mut metadata = UsageMetadata::new(input, output);
    if let Some(total) = count("total_tokens") {
        metadata.total_tokens = total;
    }
    if let Some(cached) = usage
        .pointer("/prompt_tokens_details/cached_tokens")
        .and_then(Json::as_u64)
    {
        metadata
            .input_token_details
            .insert("cache_read".into(), cached.into());
    }
    if let Some(reasoning) = usage
        .pointer("/completion_tokens_details/reasoning_tokens")
        .and_then(Json::as_u64)
    {
        metadata
            .output_token_details
            .insert("reasoning".into(), reasoning.into());
    }
    Some(metadata)
}

fn response_metadata(body: &Json, choice: &Json) -> JsonMap {
    let mut metadata = JsonMap::new();
    for (from, key) in [
        (body.get("model"), "model_name"),
        (body.get("system_fingerprint"), "system_fingerprint"),
        (choice.get("finish_reason"), "finish_reason"),
    ] {
        if let Some(value) = from.filter(|v| !v.is_null()) {
            metadata.insert(key.into(), value.clone());
        }
    }
    metadata
}

/// The message of an OpenAI error object (`{"message", "type", "code"}`),
/// or the value itself.
pub(crate) fn error_text(error: &Json) -> String {
    match error.get("message").and_then(Json::as_str) {
        Some(message) => match error.get("code").and_then(Json::as_str) {
            Some(code) => format!("{message} ({code})"),
            None => message.to_owned(),
        },
        None => match error.as_str() {
            Some(text) => text.to_owned(),
            None => error.to_string(),
        },
    }
}

pub(crate) fn malformed(message: impl Into<String>) -> Error {
    Error::Provider {
        provider: PROVIDER.into(),
        status: None,
        message: format!("malformed response: {}", message.into()),
        source: None,
    }
}

/// A tool's parameters as LangChain's `convert_to_openai_tool` sends them:
/// without the schema's `title`s (the root's and the properties'
/// pydantic titles), keeping a property that is itself named `title`.
/// Like LangChain, it goes through objects, not arrays.
fn without_titles(schema: &Json, in_properties: bool) -> Json {
    match schema {
        Json::Object(map) => Json::Object(
            map.iter()
                .filter(|(key, value)| *key != "title" || (in_properties && value.is_object()))
                .map(|(key, value)| (key.clone(), without_titles(value, key == "properties")))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use stategraph_llm::{ToolCall, ToolSchema};

    use super::*;

    /// LangChain's `_rm_titles`: titles go, a property named `title` stays.
    #[test]
    fn tool_parameters_are_sent_without_titles() {
        let schema = json!({
            "title": "remember",
            "type": "object",
            "properties": {
                "fact": {"title": "Fact", "type": "string"},
                "title": {"title": "Title", "type": "string"},
                "where": {"title": "Where", "type": "object", "properties": {
                    "city": {"title": "City", "type": "string"},
                }},
            },
            "required": ["fact", "title"],
        });
        assert_eq!(
            without_titles(&schema, false),
            json!({
                "type": "object",
                "properties": {
                    "fact": {"type": "string"},
                    "title": {"type": "string"},
                    "where": {"type": "object", "properties": {"city": {"type": "string"}}},
                },
                "required": ["fact", "title"],
            })
        );
    }

    #[test]
    fn requests_carry_messages_tools_and_options() {
        let messages = vec![
            Message::system("be brief"),
            Message::human("add 1 and 2"),
            Message::from(
                AiMessage::new("")
                    .with_tool_calls(vec![ToolCall::new("add", json!({"a": 1})).with_id("c1")]),
            ),
            Message::tool("3", "c1"),
        ];
        let options = CallOptions::default()
            .with_tools([ToolSchema::new("add", "Adds.", json!({"type": "object"}))])
            .with_tool_choice(ToolChoice::Tool("add".into()))
            .with_stop(["END"]);
        let config = OpenAiConfig::new("m").with_param("temperature", 0.into());
        let body = chat_request(&config, &messages, &options, true).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "add 1 and 2"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{\"a\":1}"}}
                    ]},
                    {"role": "tool", "tool_call_id": "c1", "content": "3"},
                ],
                "tools": [{"type": "function", "function": {"name": "add", "description": "Adds.", "parameters": {"type": "object"}}}],
                "tool_choice": {"type": "function", "function": {"name": "add"}},
                "stop": ["END"],
                "stream": true,
                "stream_options": {"include_usage": true},
                "temperature": 0,
            })
        );
    }

    #[test]
    fn remove_markers_are_not_sent() {
        let err = chat_request(
            &OpenAiConfig::new("m"),
            &[Message::remove("x")],
            &CallOptions::default(),
            false,
        )
        .unwrap_err();
        assert!(err.to_string().contains("remove marker"), "{err}");
    }

    #[test]
    fn responses_become_ai_messages_with_usage_and_metadata() {
        let body = json!({
            "id": "chatcmpl-1", "model": "gpt-x",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 1}"}},
                    {"id": "c2", "type": "function", "function": {"name": "add", "arguments": "{broken"}}
                ]
            }}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}
        });
        let message = chat_response(body, "gpt-x").unwrap();
        assert_eq!(message.id.as_deref(), Some("chatcmpl-1"));
        assert_eq!(message.tool_calls[0].args, json!({"a": 1}));
        assert_eq!(message.invalid_tool_calls[0].id.as_deref(), Some("c2"));
        assert_eq!(message.usage_metadata.as_ref().unwrap().total_tokens, 12);
        assert_eq!(message.response_metadata["finish_reason"], "tool_calls");
        assert_eq!(message.response_metadata["model_name"], "gpt-x");
    }

    #[test]
    fn empty_and_strange_responses_are_typed_errors() {
        let err = chat_response(json!({"choices": []}), "m").unwrap_err();
        assert!(matches!(err, Error::EmptyResponse { .. }), "{err}");
        let err = chat_response(json!({"nothing": true}), "m").unwrap_err();
        assert!(matches!(err, Error::EmptyResponse { .. }), "{err}");
        let err = chat_response(json!({"choices": [{"message": 3}]}), "m").unwrap_err();
        assert!(err.to_string().contains("malformed response"), "{err}");
        let err = chat_response(
            json!({"choices": [{"message": {"role": "user", "content": "hi"}}]}),
            "m",
        )
        .unwrap_err();
        assert!(err.to_string().contains("not an assistant"), "{err}");
    }

    #[test]
    fn stream_events_become_chunks() {
        let event = json!({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant"}}]});
        assert_eq!(stream_chunk(&event).unwrap(), None);
        let event = json!({"id": "c", "choices": [{"delta": {"tool_calls": [
            {"index": 1, "id": "call", "function": {"name": "add", "arguments": "{\"a"}}
        ]}}]});
        let chunk = stream_chunk(&event).unwrap().unwrap();
        assert_eq!(chunk.tool_call_chunks[0].index, Some(1));
        assert_eq!(chunk.tool_call_chunks[0].args.as_deref(), Some("{\"a"));
        let event = json!({"id": "c", "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2}});
        assert_eq!(
            stream_chunk(&event)
                .unwrap()
                .unwrap()
                .usage_metadata
                .unwrap()
                .total_tokens,
            3
        );
        let event = json!({"error": {"message": "overloaded", "code": "server_error"}});
        assert_eq!(
            stream_chunk(&event).unwrap_err().to_string(),
            "openai request failed: overloaded (server_error)"
        );
        let event = json!({"choices": [{"delta": {"tool_calls": [{"index": -1}]}}]});
        assert!(stream_chunk(&event).is_err());
    }
}
