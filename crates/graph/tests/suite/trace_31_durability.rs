//! Golden trace 31: durability modes. `sync` and `async` save an input
//! checkpoint and one per superstep; `exit` saves only the run's last
//! checkpoint, also when the run fails (README semantics 19). Compared per
//! mode: the history (`[step, source, next, log]`, newest first) of a
//! completed run, of a run stopped by an interrupt and then resumed, and of
//! a failed run; the failed run's error, and its saved error in
//! `get_state().tasks` (saved with the exit checkpoint in `exit` mode too).
//! Every observation is ported.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::{Value as Json, json};
use stategraph_checkpoint::InMemorySaver;
use stategraph_core::{RunnableConfig, Value};
use stategraph_graph::{
    Command, CompileOptions, CompiledStateGraph, Durability, NodeError, RunOptions, START, Schema,
    StateGraph, TaskContext,
};
use support::{assert_trace, assert_trace_ids, catch, fixture, log_history, snapshot_json};

fn expected(key: &str) -> Json {
    fixture("31_durability")[key].clone()
}

fn app() -> CompiledStateGraph {
    let mut g = StateGraph::new(
        Schema::new()
            .append("log")
            .last_value("fail")
            .last_value("ask"),
    );
    g.add_node("a", |_s: Json| async {
        Ok::<_, NodeError>(json!({"log": ["a"]}))
    })
    .unwrap();
    g.add_node("b", |s: Json, ctx: TaskContext| async move {
        if s["ask"].as_bool().unwrap_or(false) {
            let answer = ctx.interrupt("ok?")?.to_json()?;
            let answer = answer.as_str().unwrap_or_default().to_owned();
            return Ok::<_, NodeError>(json!({"log": [format!("b:{answer}")]}));
        }
        Ok(json!({"log": ["b"]}))
    })
    .unwrap();
    g.add_node("c", |s: Json| async move {
        if s["fail"].as_bool().unwrap_or(false) {
            return Err(NodeError::new("RuntimeError", "c failed"));
        }
        Ok(json!({"log": ["c"]}))
    })
    .unwrap();
    g.add_edge(START, "a").unwrap();
    g.add_edge("a", "b").unwrap();
    g.add_edge("b", "c").unwrap();
    g.compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap()
}

#[tokio::test]
async fn trace_31_durability_modes_save_the_checkpoints_langgraph_saves() {
    let app = app();
    for (name, durability) in [
        ("sync", Durability::Sync),
        ("async", Durability::Async),
        ("exit", Durability::Exit),
    ] {
        let options = RunOptions::new().durability(durability);

        let config = RunnableConfig::thread(format!("ok-{name}"));
        app.invoke_with(json!({"log": []}), &config, options.clone())
            .await
            .unwrap();
        assert_trace(
            &log_history(&app, &config).await,
            &expected(&format!("{name}_complete")),
        );

        let config = RunnableConfig::thread(format!("int-{name}"));
        app.invoke_with(json!({"log": [], "ask": true}), &config, options.clone())
            .await
            .unwrap();
        assert_trace(
            &log_history(&app, &config).await,
            &expected(&format!("{name}_at_interrupt")),
        );
        let resume = Command::new().resume(Value::from_json(json!("yes")));
        app.invoke_with(resume, &config, options.clone())
            .await
            .unwrap();
        assert_trace(
            &log_history(&app, &config).await,
            &expected(&format!("{name}_after_resume")),
        );

        let config = RunnableConfig::thread(format!("err-{name}"));
        let error = catch(
            app.invoke_with(json!({"log": [], "fail": true}), &config, options)
                .await,
        );
        assert_trace(&error, &expected(&format!("{name}_error")));
        assert_trace(
            &log_history(&app, &config).await,
            &expected(&format!("{name}_error_history")),
        );
        let tasks = snapshot_json(&app.get_state(&config).await.unwrap())["tasks"].clone();
        assert_trace_ids(&tasks, &expected(&format!("{name}_error_state_tasks")));
    }
}
