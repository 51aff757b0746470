//! [`ToolsCondition`]: `tools_condition` with limits (the extended router of
//! seed 000): a cap on tool-calling rounds, and tools a run may or may not
//! call.

use std::collections::HashSet;

use stategraph_graph::END;
use stategraph_llm::Message;

use crate::tools_condition;

/// A router after a model node: `"tools"` when the last AI message calls
/// tools (valid or invalid calls, as [`tools_condition`]) and the limits
/// allow it, else the end. The limits on tool names look at valid calls
/// only: an invalid call runs nothing, it is answered with its error.
///
/// Ending on a message whose calls are not run leaves them unanswered; a
/// later model call through [`repair_history`](crate::repair_history) (as
/// [`create_react_agent`](crate::create_react_agent) does) answers them with
/// an error result first.
///
/// ```
/// use serde_json::json;
/// use stategraph_llm::{AiMessage, Message, ToolCall};
/// use stategraph_prebuilt::ToolsCondition;
///
/// let condition = ToolsCondition::new().max_iterations(2).forbidden_tools(["rm"]);
/// let call = |name: &str| -> Message {
///     AiMessage::new("").with_tool_calls(vec![ToolCall::new(name, json!({}))]).into()
/// };
/// assert_eq!(condition.route(&[call("ls")]), "tools");
/// assert_eq!(condition.route(&[call("rm")]), "__end__");
/// assert_eq!(condition.route(&[call("ls"), call("ls")]), "__end__");
/// ```
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct ToolsCondition {
    max_iterations: Option<usize>,
    allowed: Option<HashSet<String>>,
    forbidden: HashSet<String>,
}

impl ToolsCondition {
    /// No limits: the same as [`tools_condition`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Ends once the conversation holds this many AI messages that called
    /// tools, validly or not (the last one included).
    pub fn max_iterations(mut self, rounds: usize) -> Self {
        self.max_iterations = Some(rounds);
        self
    }

    /// Runs calls only when every tool they name is one of these.
    pub fn allowed_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Ends instead of running calls of any of these tools.
    pub fn forbidden_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.forbidden = names.into_iter().map(Into::into).collect();
        self
    }

    /// Where to go after `messages`: `"tools"` or the end.
    pub fn route(&self, messages: &[Message]) -> &'static str {
        if tools_condition(messages) == END {
            return END;
        }
        let Some(Message::Ai(last)) = messages.last() else {
            return END;
        };
        if let Some(max) = self.max_iterations {
            let rounds = messages
                .iter()
                .filter(|m| {
                    matches!(m, Message::Ai(ai)
                        if !ai.tool_calls.is_empty() || !ai.invalid_tool_calls.is_empty())
                })
                .count();
            if rounds >= max {
                return END;
            }
        }
        let names = || last.tool_calls.iter().map(|call| call.name.as_str());
        if let Some(allowed) = &self.allowed
            && !names().all(|name| allowed.contains(name))
        {
            return END;
        }
        if names().any(|name| self.forbidden.contains(name)) {
            return END;
        }
        "tools"
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use stategraph_llm::{AiMessage, ToolCall};

    use super::*;

    fn calls(names: &[&str]) -> Message {
        let calls = names.iter().map(|n| ToolCall::new(*n, json!({}))).collect();
        AiMessage::new("").with_tool_calls(calls).into()
    }

    #[test]
    fn without_limits_it_is_tools_condition() {
        let condition = ToolsCondition::new();
        assert_eq!(condition.route(&[]), END);
        assert_eq!(condition.route(&[Message::ai("done")]), END);
        assert_eq!(condition.route(&[calls(&["a", "b"])]), "tools");
    }

    #[test]
    fn allowed_tools_must_cover_every_call() {
        let condition = ToolsCondition::new().allowed_tools(["a", "b"]);
        assert_eq!(condition.route(&[calls(&["a", "b"])]), "tools");
        assert_eq!(condition.route(&[calls(&["a", "c"])]), END);
    }

    #[test]
    fn rounds_are_counted_over_the_conversation() {
        let condition = ToolsCondition::new().max_iterations(3);
        let history = [calls(&["a"]), Message::ai("x"), calls(&["a"])];
        assert_eq!(condition.route(&history), "tools");
        let history = [calls(&["a"]), calls(&["a"]), calls(&["a"])];
        assert_eq!(condition.route(&history), END);
    }
}
