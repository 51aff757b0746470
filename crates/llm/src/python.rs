//! Python's `repr` of JSON values, for the texts LangGraph shows a model:
//! a tool call's arguments (`{'wrong': 1}`), an exception
//! (`ValueError('bad value')`), the input of a pydantic validation problem.

use std::fmt::Write as _;

use serde_json::Value as Json;

/// Python's `repr` of the value a JSON document decodes to: `None`,
/// `True`, `False`, numbers as Python writes them (`2.5`, `1.0`, `1e+16`),
/// strings quoted as Python quotes them, lists `[1, 'x']` and dicts
/// `{'a': 1}` in the JSON map's order (sorted by key unless serde_json's
/// `preserve_order` feature is on; Python keeps insertion order).
///
/// ```
/// use serde_json::json;
/// use stategraph_llm::python_repr;
///
/// assert_eq!(
///     python_repr(&json!({"it's": [true, null, 2.5], "wrong": 1})),
///     r#"{"it's": [True, None, 2.5], 'wrong': 1}"#,
/// );
/// ```
pub fn python_repr(value: &Json) -> String {
    let mut out = String::new();
    write_repr(&mut out, value, 0);
    out
}

/// Python's `repr` of a string: single quotes unless the text has single
/// quotes and no double ones; backslash escapes for the quote, backslashes
/// and control characters.
///
/// ```
/// use stategraph_llm::python_str_repr;
///
/// assert_eq!(python_str_repr("bad value"), "'bad value'");
/// assert_eq!(python_str_repr("it's"), r#""it's""#);
/// ```
pub fn python_str_repr(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    write_str_repr(&mut out, text);
    out
}

/// The name of the Python type a JSON value decodes to (`int`, `float`,
/// `str`, `bool`, `NoneType`, `list`, `dict`).
///
/// ```
/// use serde_json::json;
/// use stategraph_llm::python_type_name;
///
/// assert_eq!(python_type_name(&json!(1)), "int");
/// assert_eq!(python_type_name(&json!({"a": 1})), "dict");
/// ```
pub fn python_type_name(value: &Json) -> &'static str {
    match value {
        Json::Null => "NoneType",
        Json::Bool(_) => "bool",
        Json::Number(n) if n.is_f64() => "float",
        Json::Number(_) => "int",
        Json::String(_) => "str",
        Json::Array(_) => "list",
        Json::Object(_) => "dict",
    }
}

/// Python's repr of a float: the shortest digits that read back, written
/// positionally for exponents from -4 to 15 (`0.0001`, `2.5`, `1.0`) and
/// with a signed two-digit exponent otherwise (`1e-05`, `1e+16`).
fn float_repr(value: f64) -> String {
    if value.is_nan() {
        return "nan".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    // Rust's `{:e}` gives the shortest digits: `1e16`, `2.5e0`, `-1.5e-5`.
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..16).contains(&exponent) {
        let positional = format!("{value}");
        if positional.contains('.') {
            positional
        } else {
            format!("{positional}.0")
        }
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    }
}

fn write_repr(out: &mut String, value: &Json, depth: usize) {
    // JSON parsed by serde_json nests at most 128 levels; deeper values
    // built in code are cut short rather than recursed into.
    if depth > stategraph_core::json::MAX_DEPTH {
        out.push_str("...");
        return;
    }
    match value {
        Json::Null => out.push_str("None"),
        Json::Bool(true) => out.push_str("True"),
        Json::Bool(false) => out.push_str("False"),
        Json::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => out.push_str(&float_repr(f)),
            _ => {
                let _ = write!(out, "{n}");
            }
        },
        Json::String(text) => write_str_repr(out, text),
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr(out, item, depth + 1);
            }
            out.push(']');
        }
        Json::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_str_repr(out, key);
                out.push_str(": ");
                write_repr(out, item, depth + 1);
            }
            out.push('}');
        }
    }
}

fn write_str_repr(out: &mut String, text: &str) {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// What `repr` printed in Python 3.11 for the same values.
    #[test]
    fn reprs_are_pythons() {
        assert_eq!(
            python_repr(&json!([
                1.0, 1e16, 1e-5, 0.0001, 2.5, true, null, "it's", "a\"b", "a\nb"
            ])),
            r#"[1.0, 1e+16, 1e-05, 0.0001, 2.5, True, None, "it's", 'a"b', 'a\nb']"#
        );
        assert_eq!(
            python_repr(&json!({"a": [1, "q"], "n": -3})),
            "{'a': [1, 'q'], 'n': -3}"
        );
        assert_eq!(python_repr(&json!(123456789.125)), "123456789.125");
        assert_eq!(python_repr(&json!(-1.5e-7)), "-1.5e-07");
        assert_eq!(python_str_repr("both ' and \""), r#"'both \' and "'"#);
        assert_eq!(python_str_repr("\u{1}é"), "'\\x01é'");
    }
}
