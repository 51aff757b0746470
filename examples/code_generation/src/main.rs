//! The code generation and debugging agent of seed 000 (§6.2): a `generate`
//! node writes code for a requirement, `test` runs it against test cases,
//! and when a test fails `reflect` turns the failure into advice for the
//! next attempt. The graph pauses before every reflection
//! (`interrupt_before`) so a person can look at the failing code; resuming
//! with no input carries on.
//!
//! The three steps are tools (`#[tool]`) the nodes call, as in the seed;
//! `generate_code` and `reflect_on_errors` read the graph state through an
//! injected argument (`#[inject(state)]`), hidden from any model. The "code"
//! is a one-line arithmetic expression over `a` and `b`, so the example runs
//! anywhere; the generator is scripted to get it wrong once.
//!
//! ```text
//! cargo run -p code_generation
//! ```

// An example program: it reports to the terminal.
#![allow(clippy::print_stdout)]

use anyhow::{Context, ensure};
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};
use stategraph::graph::{CompileOptions, END, START, State, StateGraph};
use stategraph::llm::{Message, Tool, ToolContext, ToolError};
use stategraph::pregel::Input;
use stategraph::prelude::*;
use stategraph::tool;

/// The seed's `CodeGenerationState`.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct CodeGeneration {
    /// The conversation: the requirement comes in as a human message.
    #[state(reducer = stategraph::llm::add_messages)]
    messages: Vec<Message>,
    /// The latest attempt.
    current_code: String,
    /// What `test` found, as JSON.
    test_results: Json,
    /// Every reflection so far, oldest first.
    #[state(reducer = append)]
    error_history: Vec<String>,
    /// How many attempts were generated.
    iteration_count: u32,
    /// When to give up.
    max_iterations: u32,
    /// Whether the latest attempt passed every test.
    success: bool,
}

/// The tests every attempt must pass: `(a, b, expected)`.
const TESTS: [(f64, f64, f64); 3] = [(2.0, 3.0, 5.0), (0.0, 0.0, 0.0), (-4.0, 1.5, -2.5)];

/// Generates code for the requirements, avoiding earlier mistakes.
#[tool]
async fn generate_code(
    /// What the code must do.
    requirements: String,
    /// The language to write in.
    programming_language: Option<String>,
    /// The advice of earlier reflections (injected from the state).
    #[inject(state = "error_history")]
    error_history: Vec<String>,
) -> Result<String, ToolError> {
    let language = programming_language.unwrap_or_else(|| "expr".to_owned());
    if language != "expr" {
        return Err(ToolError::invalid_args(format!(
            "only `expr` code can be generated, not {language}"
        )));
    }
    // The scripted "model": a plausible first guess, then what the advice
    // asks for.
    let advice = error_history.last().map(String::as_str).unwrap_or_default();
    Ok(
        if requirements.contains("sum") && !advice.contains("use +") {
            "a - b".to_owned()
        } else if requirements.contains("sum") {
            "a + b".to_owned()
        } else {
            "a * b".to_owned()
        },
    )
}

/// Runs the code on the test cases.
#[tool]
async fn execute_and_test_code(
    /// The expression to run.
    code: String,
) -> String {
    let mut results = Vec::new();
    let mut errors = Vec::new();
    for (a, b, expected) in TESTS {
        match evaluate(&code, a, b) {
            Ok(actual) => results.push(json!({
                "a": a, "b": b, "expected": expected, "actual": actual,
                "passed": (actual - expected).abs() < 1e-9,
            })),
            Err(message) => errors.push(json!({"type": "SyntaxError", "message": message})),
        }
    }
    let passed = errors.is_empty() && results.iter().all(|r| r["passed"] == json!(true));
    json!({"execution_success": errors.is_empty(), "test_success": passed, "errors": errors, "tests": results})
        .to_string()
}

/// Turns failed tests into advice for the next attempt.
#[tool]
async fn reflect_on_errors(
    /// The code that failed.
    code: String,
    /// What `execute_and_test_code` returned.
    test_results: String,
    /// Which attempt this is (injected from the state).
    #[inject(state = "iteration_count")]
    iteration: u32,
) -> Result<String, ToolError> {
    let results: Json = serde_json::from_str(&test_results)
        .map_err(|err| ToolError::invalid_args(format!("test_results is not JSON: {err}")))?;
    let failed: Vec<String> = results["tests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["passed"] == json!(false))
        .map(|t| {
            format!(
                "f({}, {}) gave {} instead of {}",
                t["a"], t["b"], t["actual"], t["expected"]
            )
        })
        .collect();
    let hint = if failed.iter().any(|f| f.contains("instead of 5")) {
        "the result should grow with b: use + instead of -"
    } else {
        "check the operator against the failing cases"
    };
    Ok(format!(
        "attempt {iteration} (`{code}`): {}; {hint}",
        failed.join(", ")
    ))
}

/// Evaluates `a op b` (or a lone operand) for the given `a` and `b`.
fn evaluate(code: &str, a: f64, b: f64) -> Result<f64, String> {
    let operand = |token: &str| match token {
        "a" => Ok(a),
        "b" => Ok(b),
        other => other
            .parse::<f64>()
            .map_err(|_| format!("unknown name {other:?}")),
    };
    match code.split_whitespace().collect::<Vec<_>>()[..] {
        [x] => operand(x),
        [x, op, y] => {
            let (x, y) = (operand(x)?, operand(y)?);
            match op {
                "+" => Ok(x + y),
                "-" => Ok(x - y),
                "*" => Ok(x * y),
                "/" => Ok(x / y),
                other => Err(format!("unknown operator {other:?}")),
            }
        }
        _ => Err(format!("cannot parse {code:?}")),
    }
}

/// Calls a tool the way a `ToolNode` would, with the state injected.
async fn call(tool: &impl Tool, args: Json, state: &CodeGeneration) -> Result<String, NodeError> {
    let state = Value::from_json(serde_json::to_value(state)?);
    let output = tool
        .call(args, ToolContext::default().with_state(state))
        .await?;
    Ok(output.content.text().into_owned())
}

async fn generate(state: CodeGeneration) -> Result<CodeGenerationUpdate, NodeError> {
    let requirements = state
        .messages
        .last()
        .map(|m| m.text().into_owned())
        .unwrap_or_default();
    let code = call(
        &GenerateCodeTool,
        json!({"requirements": requirements}),
        &state,
    )
    .await?;
    println!("generate (attempt {}): {code}", state.iteration_count + 1);
    Ok(CodeGenerationUpdate::default()
        .current_code(code)
        .iteration_count(state.iteration_count + 1))
}

async fn test(state: CodeGeneration) -> Result<CodeGenerationUpdate, NodeError> {
    let results = call(
        &ExecuteAndTestCodeTool,
        json!({"code": state.current_code}),
        &state,
    )
    .await?;
    let results: Json = serde_json::from_str(&results)?;
    let success = results["test_success"] == json!(true);
    println!("test: {}", if success { "all passed" } else { "failed" });
    Ok(CodeGenerationUpdate::default()
        .test_results(results)
        .success(success))
}

async fn reflect(state: CodeGeneration) -> Result<CodeGenerationUpdate, NodeError> {
    let args = json!({"code": state.current_code, "test_results": state.test_results.to_string()});
    let advice = call(&ReflectOnErrorsTool, args, &state).await?;
    println!("reflect: {advice}");
    Ok(CodeGenerationUpdate::default().error_history(vec![advice]))
}

/// After `test`: done on success, reflect while attempts remain, else stop.
fn after_test(state: &CodeGenerationView) -> &'static str {
    if *state.success || *state.iteration_count >= *state.max_iterations {
        END
    } else {
        "reflect"
    }
}

fn agent() -> anyhow::Result<CompiledStateGraph> {
    let mut graph = StateGraph::typed::<CodeGeneration>();
    graph.add_node("generate", generate)?;
    graph.add_node("test", test)?;
    graph.add_node("reflect", reflect)?;
    graph.add_edge(START, "generate")?;
    graph.add_edge("generate", "test")?;
    graph.add_conditional_edges("test", after_test, Some(["reflect", END].into()))?;
    graph.add_edge("reflect", "generate")?;
    Ok(graph.compile_with(
        CompileOptions::new()
            .checkpointer(InMemorySaver::new())
            .interrupt_before(["reflect"]),
    )?)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let app = agent()?;
    let thread = RunnableConfig::thread("codegen-1");
    let input = CodeGeneration {
        messages: vec![Message::human("Write f(a, b): the sum of a and b.")],
        max_iterations: 3,
        ..CodeGeneration::default()
    };

    // The first attempt fails its tests: the run stops before `reflect`.
    app.invoke(Value::new(input), &thread).await?;
    let paused = app.get_state(&thread).await?;
    ensure!(
        paused.next == ["reflect"],
        "expected a pause before reflect, next is {:?}",
        paused.next
    );
    let values = paused.values.to_json()?;
    println!(
        "paused before reflect: `{}` failed {} (a person could edit the state here)",
        values["current_code"].as_str().unwrap_or_default(),
        values["test_results"]["tests"]
    );

    // Resume with no input: reflect, generate again, test again.
    let done = app.invoke(Input::Resume, &thread).await?.to_json()?;
    let done: CodeGeneration = serde_json::from_value(done).context("reading the final state")?;
    println!(
        "done after {} attempts: `{}` (success: {})",
        done.iteration_count, done.current_code, done.success
    );
    ensure!(
        done.success,
        "the second attempt should pass: {:?}",
        done.test_results
    );
    ensure!(done.iteration_count == 2 && done.current_code == "a + b");
    ensure!(
        done.error_history.len() == 1,
        "one reflection: {:?}",
        done.error_history
    );
    Ok(())
}
