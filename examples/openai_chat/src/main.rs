//! Chats with a real OpenAI-compatible endpoint (OpenAI, vLLM, Ollama,
//! llama.cpp's server) through a one-node `MessagesState` graph, printing
//! the answer's tokens as the `messages` stream mode delivers them.
//!
//! Configure it as the OpenAI SDKs are configured:
//!
//! ```text
//! OPENAI_API_KEY=sk-... cargo run -p openai_chat -- "Why is the sky blue?"
//! OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=llama3.2 cargo run -p openai_chat
//! ```
//!
//! Without `OPENAI_BASE_URL` or `OPENAI_API_KEY` it prints why it cannot
//! run and exits successfully (it is not part of `cargo xtask ci`).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;

use futures::StreamExt;
use stategraph::graph::{MessagesStateUpdate, MessagesStateView};
use stategraph::openai::{ChatOpenAi, ConfigError};
use stategraph::prelude::*;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let model = match ChatOpenAi::from_env("gpt-4o-mini") {
        Ok(model) => model,
        Err(err @ ConfigError::MissingVar { .. }) => {
            println!("openai_chat: not run ({err}); set OPENAI_API_KEY or OPENAI_BASE_URL");
            return Ok(());
        }
        Err(err) => return Err(err.into()),
    };
    let question = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "In one sentence: what is a state graph?".to_owned());
    println!(
        "asking {} at {}",
        model.config().model(),
        model.config().base_url()
    );

    let mut graph = StateGraph::typed::<MessagesState>();
    graph.add_node("chat", move |state: MessagesStateView| {
        let model = model.clone();
        let history: Vec<Message> = state.messages.to_vec();
        async move {
            let answer = model.invoke(&history, &CallOptions::default()).await?;
            Ok::<_, NodeError>(MessagesStateUpdate::default().messages(vec![answer.into()]))
        }
    })?;
    graph.add_edge(START, "chat")?;
    let app = graph.compile()?;

    let input = Value::new(MessagesState {
        messages: vec![Message::human(question)],
    });
    let mut stream = app.stream(input, &RunnableConfig::default(), StreamMode::Messages);
    let mut stdout = std::io::stdout();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        if let Some(event) = chunk.message() {
            print!("{}", event.message.text());
            stdout.flush()?;
        }
    }
    println!();
    Ok(())
}
