//! The legacy `messages` stream mode (API.md 7.3): each message once as
//! `messages/metadata` (`{id: {"metadata": ...}}`), then the message so far
//! after each streamed token as `messages/partial`, or a message a node
//! returned whole as `messages/complete`; what the official server makes of
//! the `(message, metadata)` pairs of `messages-tuple`.

use std::collections::HashMap;

use serde_json::{Value, json};
use stategraph::llm::{AiMessageChunk, Message};

/// The messages a run has streamed so far, by id.
#[derive(Debug, Default)]
pub(crate) struct LegacyMessages {
    seen: HashMap<String, AiMessageChunk>,
}

impl LegacyMessages {
    /// The events one `messages-tuple` pair (`[message, metadata]`, in
    /// LangChain's dict form) becomes.
    pub(crate) fn events(&mut self, pair: Value) -> Vec<(&'static str, Value)> {
        let Value::Array(mut pair) = pair else {
            return Vec::new();
        };
        let metadata = pair.pop().unwrap_or(Value::Null);
        let Some(message) = pair.pop() else {
            return Vec::new();
        };
        let id = message
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let mut events = Vec::with_capacity(2);
        let first = !self.seen.contains_key(&id);
        if first {
            events.push((
                "messages/metadata",
                json!({ id.clone(): {"metadata": metadata} }),
            ));
        }
        let is_chunk = message
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|kind| kind.ends_with("Chunk"));
        let parsed = is_chunk
            .then(|| serde_json::from_value::<AiMessageChunk>(message.clone()).ok())
            .flatten();
        match parsed {
            Some(chunk) => {
                let so_far = self.seen.entry(id).or_default();
                so_far.merge(chunk);
                let mut whole = serde_json::to_value(Message::from(so_far.clone().into_message()))
                    .unwrap_or(Value::Null);
                crate::wire::langchain_messages(&mut whole);
                events.push(("messages/partial", Value::Array(vec![whole])));
            }
            None => {
                self.seen.entry(id).or_default();
                events.push(("messages/complete", Value::Array(vec![message])));
            }
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_add_up_and_the_metadata_comes_once() {
        let mut legacy = LegacyMessages::default();
        let token = |text: &str| json!([{"type": "AIMessageChunk", "content": text, "id": "m1"}, {"langgraph_node": "agent"}]);
        let first = legacy.events(token("Hello"));
        assert_eq!(first.len(), 2);
        assert_eq!(
            first[0],
            (
                "messages/metadata",
                json!({"m1": {"metadata": {"langgraph_node": "agent"}}})
            )
        );
        assert_eq!(first[1].0, "messages/partial");
        let second = legacy.events(token(" world"));
        assert_eq!(second.len(), 1);
        let whole = &second[0].1[0];
        assert_eq!(whole["content"], "Hello world");
        assert_eq!(whole["type"], "ai");
        assert_eq!(whole["id"], "m1");

        let complete =
            legacy.events(json!([{"type": "human", "content": "hi", "id": "h1"}, json!({})]));
        assert_eq!(
            complete[1],
            (
                "messages/complete",
                json!([{"type": "human", "content": "hi", "id": "h1"}])
            )
        );
    }
}
