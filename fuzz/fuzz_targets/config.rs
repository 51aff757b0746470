//! Configuration from outside: a run's `RunnableConfig` as JSON (thread,
//! namespace and checkpoint id strings, recursion limit, concurrency,
//! metadata, tags) and an OpenAI client's environment variables.
//!
//! Input: JSON text (anything else is skipped). The value is read as a
//! `RunnableConfig`; one that reads must write and read back equal, give
//! a checkpoint address, merge into checkpoint metadata, and drive a run,
//! a state read, a history and a state update of a small pausing graph on
//! an in-memory saver (values or typed errors, never a panic or a hang).
//! The string entries of its `"openai"` key are the environment of
//! `OpenAiConfig::from_vars`; a configuration that reads must build a
//! request, or refuse with an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value as Json, json};
use stategraph_checkpoint::{
    CheckpointConfig, CheckpointMetadata, CheckpointSaver, ListQuery, MetadataFilter,
};
use stategraph_core::{RunnableConfig, Value};
use stategraph_llm::Message;
use stategraph_openai::{OpenAiConfig, fuzzing};

fuzz_target!(|input: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Json>(input) else {
        return;
    };
    if let Some(Json::Object(vars)) = value.get("openai") {
        let lookup = |name: &str| vars.get(name).and_then(Json::as_str).map(str::to_owned);
        if let Ok(config) = OpenAiConfig::from_vars("fuzz-model", lookup) {
            let _ = fuzzing::build_request(config, &[Message::human("hi")]);
        }
    }
    let Ok(config) = serde_json::from_value::<RunnableConfig>(value) else {
        return;
    };
    let json = serde_json::to_value(&config).expect("configs serialize");
    let back: RunnableConfig = serde_json::from_value(json.clone())
        .unwrap_or_else(|err| panic!("a config's JSON does not read back: {err}\n{json}"));
    assert_eq!(back, config, "a config changed through its JSON");

    if let Some(address) = CheckpointConfig::from_runnable(&config) {
        assert_eq!(Some(address.thread_id.as_str()), config.thread_id());
        let text = serde_json::to_string(&address).expect("addresses serialize");
        let back: CheckpointConfig = serde_json::from_str(&text)
            .unwrap_or_else(|err| panic!("an address does not read back: {err}\n{text}"));
        assert_eq!(back, address);
    }
    let metadata = CheckpointMetadata::default()
        .merged_with_config(&config)
        .sanitized();
    if let Ok(filter) = MetadataFilter::new(config.metadata.clone()) {
        let _ = filter.matches(&metadata);
    }

    let stategraph_fuzz::Paused { saver, graph } = stategraph_fuzz::paused();
    stategraph_fuzz::runtime().block_on(async {
        let _ = graph.invoke(json!({"write": "w"}), &config).await;
        let _ = graph.get_state(&config).await;
        let _ = graph
            .get_state_history(&config, ListQuery::default().limit(4))
            .await;
        let _ = graph
            .update_state(&config, Some(Value::from_json(json!({"write": "u"}))), None)
            .await;
        if let Some(thread) = config.thread_id() {
            // Ids the limit table refuses (a NUL, too long) are typed errors.
            match saver.delete_thread(thread).await {
                Ok(()) | Err(stategraph_checkpoint::Error::Limit { .. }) => {}
                Err(err) => panic!("the in-memory saver failed to delete {thread:?}: {err}"),
            }
        }
    });
});
