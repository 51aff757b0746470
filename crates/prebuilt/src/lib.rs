//! Prebuilt graph parts: the tool-calling node, its router, the ReAct
//! agent, the tool-call validation node and the human-review types.
#![doc = include_str!("../README.md")]

mod condition;
mod history;
mod interrupt;
mod react;
mod review;
mod schema_check;
mod tool_node;
mod validation;

pub use condition::ToolsCondition;
pub use history::{
    HistoryRepair, invalid_call_text, is_well_paired, missing_result_text, repair_history,
};
pub use interrupt::{
    ActionRequest, HumanInterrupt, HumanInterruptConfig, HumanResponse, request_human_review,
};
pub use react::{
    AgentState, AgentStateUpdate, AgentStateView, AgentVersion, NEED_MORE_STEPS, POST_MODEL_HOOK,
    PRE_MODEL_HOOK, ReactAgent, STRUCTURED_RESPONSE_NODE, create_react_agent,
};
pub use review::{REVIEW_NODE, ToolReview};

pub use tool_node::{
    ErrorHandler, ToolCallWithContext, ToolErrors, ToolNode, interrupt, tools_condition,
};
pub use validation::{
    ArgIssue, ArgSchema, ErrorFormatter, PYDANTIC_VERSION, TypedArgSchema, ValidationError,
    ValidationNode,
};
