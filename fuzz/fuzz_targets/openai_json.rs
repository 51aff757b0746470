//! A chat completion body, and one streamed event's data, as an
//! OpenAI-compatible server could send them.
//!
//! Input: the body. It is read as `ChatOpenAi::generate` reads a reply
//! and as the data of one streamed event. A reply that reads is an AI
//! message, and the conversation goes on with it: it must be sendable in
//! the next request, and survive LangChain's message JSON both ways (what
//! checkpoints and the server store) unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stategraph_llm::Message;
use stategraph_openai::OpenAiConfig;
use stategraph_openai::fuzzing;

fuzz_target!(|input: &[u8]| {
    if let Ok(reply) = fuzzing::chat_response(input, "fuzz-model") {
        let message = Message::from(reply);
        let history = [Message::human("hi"), message.clone()];
        if let Err(err) = fuzzing::chat_request(&OpenAiConfig::new("fuzz-model"), &history) {
            panic!("a reply cannot be sent back: {err}");
        }
        let json = serde_json::to_value(&message).expect("messages serialize");
        let back = Message::from_json(json.clone())
            .unwrap_or_else(|err| panic!("a reply's JSON does not read back: {err}\n{json}"));
        assert_eq!(back, message, "a reply changed through its JSON");
    }
    if let Some(Ok(Some(chunk))) = fuzzing::stream_event(input) {
        let _ = chunk.into_message();
    }
});
