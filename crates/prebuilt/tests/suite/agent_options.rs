//! `create_react_agent` options: a model chosen per call (dynamic model),
//! a system message as prompt, and a prompt computed from the conversation.

use std::sync::Arc;

use serde_json::{Value as Json, json};
use stategraph_core::RunnableConfig;
use stategraph_graph::NodeError;
use stategraph_graph::State;
use stategraph_llm::{
    AiMessage, FnTool, Message, ScriptedChatModel, SharedChatModel, SharedTool, SystemMessage,
    ToolError,
};
use stategraph_prebuilt::{AgentState, create_react_agent};

fn echo() -> SharedTool {
    Arc::new(FnTool::typed(
        "echo",
        "Echoes.",
        |args: Json, _ctx| async move { Ok::<_, ToolError>(args.to_string()) },
    ))
}

fn answering(text: &'static str) -> Arc<ScriptedChatModel> {
    Arc::new(ScriptedChatModel::new([AiMessage::new(text)]))
}

async fn ask(agent: &stategraph_graph::CompiledStateGraph, question: &str) -> Result<Json, String> {
    agent
        .invoke(
            json!({"messages": [["user", question]]}),
            &RunnableConfig::default(),
        )
        .await
        .map(|out| out.to_json().unwrap())
        .map_err(|err| err.to_string())
}

fn last_text(out: &Json) -> &str {
    out["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
}

#[tokio::test]
async fn a_dynamic_model_is_chosen_per_call_with_the_tools_bound() {
    let (small, large) = (answering("from small"), answering("from large"));
    let (s, l) = (small.clone(), large.clone());
    let unused = answering("never");
    let agent = create_react_agent(unused.clone(), [echo()])
        .dynamic_model(move |state, _ctx| {
            // The typed view of the agent's state.
            let state = AgentState::view(state).unwrap();
            let long = state.messages.last().is_some_and(|m| m.text().len() > 10);
            let model: SharedChatModel = if long { l.clone() } else { s.clone() };
            std::future::ready(Ok::<_, NodeError>(model))
        })
        .build()
        .unwrap();
    assert_eq!(last_text(&ask(&agent, "hi").await.unwrap()), "from small");
    assert_eq!(
        last_text(&ask(&agent, "a much longer question").await.unwrap()),
        "from large"
    );
    assert_eq!(unused.call_count(), 0);
    let bound = &large.calls()[0].options.tools;
    assert_eq!(
        bound.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["echo"]
    );
}

#[tokio::test]
async fn a_failing_model_choice_fails_the_run() {
    let agent = create_react_agent(answering("x"), [echo()])
        .dynamic_model(|_state, _ctx| {
            std::future::ready(Err::<SharedChatModel, _>(NodeError::new(
                "LookupError",
                "no model for this tenant",
            )))
        })
        .build()
        .unwrap();
    let err = ask(&agent, "hi").await.unwrap_err();
    assert!(err.contains("no model for this tenant"), "{err}");
}

#[tokio::test]
async fn prompts_shape_what_the_model_is_sent_not_what_is_stored() {
    let model = answering("ok");
    let mut system = SystemMessage::new("Be brief.");
    system.name = Some("policy".to_owned());
    let agent = create_react_agent(model.clone(), [echo()])
        .system_prompt(system)
        .build()
        .unwrap();
    ask(&agent, "first").await.unwrap();
    let sent = &model.calls()[0].messages;
    assert!(matches!(&sent[0], Message::System(m) if m.name.as_deref() == Some("policy")));

    // A prompt function: keep the newest message only, after instructions.
    let model = answering("short");
    let agent = create_react_agent(model.clone(), [echo()])
        .prompt_fn(|conversation| {
            let mut sent = vec![Message::system("Answer the last message only.")];
            sent.extend(conversation.last().cloned());
            sent
        })
        .build()
        .unwrap();
    let input = json!({"messages": [["user", "old"], ["ai", "older answer"], ["user", "new"]]});
    let out = agent
        .invoke(input, &RunnableConfig::default())
        .await
        .unwrap()
        .to_json()
        .unwrap();
    let sent = &model.calls()[0].messages;
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1].text(), "new");
    assert_eq!(
        out["messages"].as_array().unwrap().len(),
        4,
        "all turns stay stored"
    );
    // Bound tools still reach the model under a prompt function.
    assert!(!model.calls()[0].options.tools.is_empty());
}

#[tokio::test]
async fn a_response_format_adds_a_structured_answer_after_the_loop() {
    let model = Arc::new(ScriptedChatModel::new([
        AiMessage::new("The capital is Paris."),
        AiMessage::new(r#"{"city": "Paris"}"#),
    ]));
    let schema = stategraph_llm::OutputSchema::new(
        "Capital",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    );
    let agent = create_react_agent(model.clone(), [echo()])
        .response_format_with_prompt("Answer as JSON.", schema)
        .build()
        .unwrap();
    let out = ask(&agent, "capital of France?").await.unwrap();
    assert_eq!(out["structured_response"], json!({"city": "Paris"}));
    assert_eq!(
        last_text(&out),
        "The capital is Paris.",
        "the answer is not stored twice"
    );
    let calls = model.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].messages[0].text(), "Answer as JSON.");
    let offered: Vec<&str> = calls[1]
        .options
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert!(
        !offered.contains(&"echo"),
        "the agent's tools are not offered: {offered:?}"
    );
    let mut nodes: Vec<String> = agent
        .get_graph(false)
        .nodes()
        .iter()
        .map(|n| n.id.clone())
        .collect();
    nodes.sort();
    assert!(nodes.contains(&stategraph_prebuilt::STRUCTURED_RESPONSE_NODE.to_owned()));

    // Without a response format the state has no structured answer.
    let plain = create_react_agent(answering("hi"), [echo()])
        .build()
        .unwrap();
    assert!(
        ask(&plain, "hello")
            .await
            .unwrap()
            .get("structured_response")
            .is_none()
    );
}

#[tokio::test]
async fn a_structured_answer_that_does_not_parse_fails_the_run() {
    let model = ScriptedChatModel::new([AiMessage::new("done"), AiMessage::new("not json")]);
    let schema = stategraph_llm::OutputSchema::new("Capital", json!({"type": "object"}));
    let agent = create_react_agent(model, [echo()])
        .response_format(schema)
        .build()
        .unwrap();
    let err = ask(&agent, "q").await.unwrap_err();
    assert!(err.contains("Capital"), "{err}");
}

/// `.checkpointer(..)` and `.handle_tool_errors(..)` on the builder: the
/// tools are given once, a failing tool answers with the chosen text, and
/// the thread is saved.
#[tokio::test]
async fn a_checkpointer_and_tool_error_handling_on_the_builder() {
    use stategraph_checkpoint::InMemorySaver;
    use stategraph_llm::ToolCall;
    use stategraph_prebuilt::ToolErrors;

    let broken: SharedTool = Arc::new(FnTool::typed(
        "broken",
        "Always fails.",
        |_args: Json, _ctx| async move { Err::<String, _>(ToolError::failed("disk full")) },
    ));
    let model = Arc::new(ScriptedChatModel::new([
        AiMessage::new("").with_tool_calls(vec![ToolCall::new("broken", json!({})).with_id("c1")]),
        AiMessage::new("sorry"),
    ]));
    let agent = create_react_agent(model, [broken])
        .checkpointer(InMemorySaver::new())
        .handle_tool_errors(ToolErrors::Text("the tool is down".into()))
        .build()
        .unwrap();
    let cfg = RunnableConfig::thread("t");
    agent
        .invoke(json!({"messages": [["user", "go"]]}), &cfg)
        .await
        .unwrap();
    let saved = agent
        .get_state(&cfg)
        .await
        .unwrap()
        .values
        .to_json()
        .unwrap();
    let messages = saved["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[2]["content"], "the tool is down");
    assert_eq!(messages[2]["status"], "error");
    assert_eq!(messages[3]["content"], "sorry");
}
