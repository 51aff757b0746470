//! A ReAct agent over an OpenAI-compatible endpoint, streamed: the tool
//! calls and results as each node finishes (`updates`), and the answer
//! token by token as the endpoint sends it (`messages`).
//!
//! ```text
//! OPENAI_API_KEY=sk-... cargo run -p streaming_agent
//! OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=llama3.2 cargo run -p streaming_agent
//! cargo run -p streaming_agent      # no endpoint set: a local stand-in answers
//! ```
//!
//! Without `OPENAI_BASE_URL` or `OPENAI_API_KEY`, the program starts a
//! small OpenAI-compatible server on 127.0.0.1 that plays a model: it calls
//! the weather tool once, then streams an answer built from the tool's
//! result. The agent talks to it over HTTP and server-sent events exactly
//! as to OpenAI, and the program checks what it streamed.

// An example program: it reports to the terminal.
#![allow(clippy::print_stdout)]

use std::io::Write;

use anyhow::ensure;
use futures::StreamExt;
use serde_json::json;
use stategraph::llm::{Message, ToolError};
use stategraph::openai::{ChatOpenAi, ConfigError, OpenAiConfig};
use stategraph::prelude::*;

/// The weather in `city` (a real tool would call a weather service).
#[tool]
async fn get_weather(
    /// The city.
    city: String,
) -> Result<String, ToolError> {
    Ok(format!("It is 18°C and sunny in {city}."))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (model, local) = match ChatOpenAi::from_env("gpt-4o-mini") {
        Ok(model) => (model, false),
        Err(ConfigError::MissingVar { .. }) => {
            let url = stand_in::start().await?;
            println!("(no endpoint set: a local stand-in answers at {url})");
            (
                ChatOpenAi::new(OpenAiConfig::new("stand-in").with_base_url(url))?,
                true,
            )
        }
        Err(err) => return Err(err.into()),
    };
    let weather: SharedTool = std::sync::Arc::new(GetWeatherTool);
    let agent = create_react_agent(model, [weather])
        .prompt("Answer in one sentence.")
        .build()?;

    let input = json!({"messages": [["user", "What's the weather in Paris?"]]});
    let modes = StreamModes::from([StreamMode::Updates, StreamMode::Messages]);
    let mut stream = agent.stream(Value::from_json(input), &RunnableConfig::default(), modes);
    let (mut tokens, mut answer, mut tool_results) = (0, String::new(), Vec::new());
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        match chunk.mode {
            StreamMode::Messages => {
                // `[message chunk, metadata]`: print the model's tokens.
                let event = chunk.to_json();
                if event[1]["langgraph_node"] == "agent" {
                    let text = event[0]["content"].as_str().unwrap_or_default();
                    print!("{text}");
                    std::io::stdout().flush()?;
                    answer.push_str(text);
                    tokens += 1;
                }
            }
            _ => {
                let update = chunk.to_json();
                if let Some(messages) = update["tools"]["messages"].as_array() {
                    for message in messages {
                        let message: Message = serde_json::from_value(message.clone())?;
                        println!("[tool] {}", message.text());
                        tool_results.push(message.text().into_owned());
                    }
                }
            }
        }
    }
    println!();
    if local {
        ensure!(
            tool_results == ["It is 18°C and sunny in Paris."],
            "{tool_results:?}"
        );
        ensure!(tokens > 3, "the answer came in {tokens} pieces");
        ensure!(
            answer.contains("18°C and sunny"),
            "the answer used the tool: {answer}"
        );
    }
    Ok(())
}

/// A minimal OpenAI-compatible chat server on 127.0.0.1 that plays a model:
/// without a tool result in the conversation it asks for the weather in
/// Paris; with one, it answers with it, streamed word by word.
mod stand_in {
    use std::sync::atomic::{AtomicU64, Ordering};

    use serde_json::{Value as Json, json};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    static NEXT_ID: AtomicU64 = AtomicU64::new(1);

    /// Starts the server; its base URL.
    pub(crate) async fn start() -> anyhow::Result<String> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/v1", listener.local_addr()?);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    // A broken connection only fails that request.
                    let _ = answer(socket).await;
                });
            }
        });
        Ok(url)
    }

    /// Reads one request and answers it (one request per connection).
    async fn answer(mut socket: TcpStream) -> anyhow::Result<()> {
        let mut data = Vec::new();
        let mut buf = [0_u8; 4096];
        let body_start = loop {
            let read = socket.read(&mut buf).await?;
            anyhow::ensure!(read > 0, "the client went away");
            data.extend_from_slice(&buf[..read]);
            if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                break end + 4;
            }
        };
        let head = String::from_utf8_lossy(&data[..body_start]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0);
        while data.len() < body_start + length {
            let read = socket.read(&mut buf).await?;
            anyhow::ensure!(read > 0, "the client went away");
            data.extend_from_slice(&buf[..read]);
        }
        let request: Json = serde_json::from_slice(&data[body_start..body_start + length])?;
        let messages = request["messages"].as_array().cloned().unwrap_or_default();
        let result = messages
            .iter()
            .rev()
            .find(|m| m["role"] == "tool")
            .and_then(|m| m["content"].as_str())
            .map(str::to_owned);
        let streamed = request["stream"] == true;
        // Every completion has an id of its own (the agent's messages take
        // it: two answers with one id would be one message).
        let id = format!("chatcmpl-{}", NEXT_ID.fetch_add(1, Ordering::Relaxed));
        let response = match (&result, streamed) {
            (None, true) => events(&[call_chunk(&id), finish(&id, "tool_calls")]),
            (None, false) => json_body(
                &id,
                &json!({"role": "assistant", "content": null, "tool_calls": [call()]}),
                "tool_calls",
            ),
            (Some(result), true) => {
                let mut chunks: Vec<Json> = format!("Right now: {result}")
                    .split_inclusive(' ')
                    .map(|word| delta(&id, json!({"content": word})))
                    .collect();
                chunks.push(finish(&id, "stop"));
                events(&chunks)
            }
            (Some(result), false) => json_body(
                &id,
                &json!({"role": "assistant", "content": format!("Right now: {result}")}),
                "stop",
            ),
        };
        socket.write_all(response.as_bytes()).await?;
        socket.shutdown().await?;
        Ok(())
    }

    fn call() -> Json {
        json!({"id": "call_1", "type": "function",
               "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}})
    }

    fn call_chunk(id: &str) -> Json {
        let mut call = call();
        call["index"] = json!(0);
        delta(id, json!({"role": "assistant", "tool_calls": [call]}))
    }

    fn delta(id: &str, delta: Json) -> Json {
        json!({"id": id, "object": "chat.completion.chunk", "model": "stand-in",
               "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    }

    fn finish(id: &str, reason: &str) -> Json {
        json!({"id": id, "object": "chat.completion.chunk", "model": "stand-in",
               "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    }

    /// A `text/event-stream` response of these chunks, then `[DONE]`.
    fn events(chunks: &[Json]) -> String {
        let mut body = String::new();
        for chunk in chunks {
            body.push_str(&format!("data: {chunk}\n\n"));
        }
        body.push_str("data: [DONE]\n\n");
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{body}"
        )
    }

    /// A whole `chat.completion` JSON response.
    fn json_body(id: &str, message: &Json, reason: &str) -> String {
        let body = json!({"id": id, "object": "chat.completion", "model": "stand-in",
                          "choices": [{"index": 0, "message": message, "finish_reason": reason}],
                          "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
        .to_string();
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
    }
}
