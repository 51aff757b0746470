//! Field paths of the semantic index (LangGraph's `get_text_at_path`): which
//! texts of a value get embedded.
//!
//! `$` (or an empty path) is the whole value as JSON with sorted keys;
//! `a.b` a nested field; `arr[0]`, `arr[-1]` one element, `arr[*]` every
//! element; `obj.*` every field; `{a,b.c}` several fields. A string, number
//! or boolean found gives its text, a list or object its JSON text, `null`
//! or nothing found gives nothing; a malformed path finds nothing.

use serde_json::Value as Json;

/// The texts `path` selects in `value`.
pub fn texts_at_path(value: &Json, path: &str) -> Vec<String> {
    if path.is_empty() || path == "$" {
        return vec![sorted_json(value)];
    }
    let Some(tokens) = tokenize(path) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    extract(value, &tokens, &mut out);
    out
}

#[derive(Debug, PartialEq)]
enum Token {
    Field(String),
    Index(i64),
    AllElements,
    AllFields,
    Fields(Vec<Vec<Token>>),
}

fn tokenize(path: &str) -> Option<Vec<Token>> {
    let mut tokens = Vec::new();
    let mut chars = path.chars().peekable();
    let mut field = String::new();
    let flush = |field: &mut String, tokens: &mut Vec<Token>| {
        if !field.is_empty() {
            let name = std::mem::take(field);
            tokens.push(if name == "*" {
                Token::AllFields
            } else {
                Token::Field(name)
            });
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '.' => flush(&mut field, &mut tokens),
            '[' => {
                flush(&mut field, &mut tokens);
                let index: String = chars.by_ref().take_while(|c| *c != ']').collect();
                tokens.push(match index.trim() {
                    "*" => Token::AllElements,
                    i => Token::Index(i.parse().ok()?),
                });
            }
            '{' => {
                flush(&mut field, &mut tokens);
                let inner: String = chars.by_ref().take_while(|c| *c != '}').collect();
                let fields = inner
                    .split(',')
                    .map(|f| tokenize(f.trim()))
                    .collect::<Option<Vec<_>>>()?;
                tokens.push(Token::Fields(fields));
            }
            c => field.push(c),
        }
    }
    flush(&mut field, &mut tokens);
    Some(tokens)
}

fn extract(value: &Json, tokens: &[Token], out: &mut Vec<String>) {
    let Some((token, rest)) = tokens.split_first() else {
        match value {
            Json::Null => {}
            Json::String(s) => out.push(s.clone()),
            Json::Number(n) => out.push(n.to_string()),
            Json::Bool(b) => out.push(b.to_string()),
            other => out.push(sorted_json(other)),
        }
        return;
    };
    match (token, value) {
        (Token::Field(name), Json::Object(map)) => {
            if let Some(inner) = map.get(name) {
                extract(inner, rest, out);
            }
        }
        (Token::Index(index), Json::Array(items)) => {
            let len = items.len() as i64;
            let at = if *index < 0 { len + index } else { *index };
            if let Some(item) = usize::try_from(at).ok().and_then(|i| items.get(i)) {
                extract(item, rest, out);
            }
        }
        (Token::AllElements, Json::Array(items)) | (Token::AllFields, Json::Array(items)) => {
            for item in items {
                extract(item, rest, out);
            }
        }
        (Token::AllFields, Json::Object(map)) => {
            for item in map.values() {
                extract(item, rest, out);
            }
        }
        (Token::Fields(fields), Json::Object(_)) => {
            for field in fields {
                extract(value, field, out);
            }
        }
        _ => {}
    }
}

/// JSON text with object keys sorted at every level.
fn sorted_json(value: &Json) -> String {
    fn sort(value: &Json) -> Json {
        match value {
            Json::Object(map) => {
                let mut entries: Vec<(&String, &Json)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                Json::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.clone(), sort(v)))
                        .collect(),
                )
            }
            Json::Array(items) => Json::Array(items.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    sort(value).to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn paths_select_texts_as_langgraph() {
        let doc = json!({
            "a": {"b": "nested"},
            "arr": [{"x": "first"}, {"x": "last"}],
            "obj": {"p": 1, "q": true},
            "n": null, "empty": [], "text": "hello"
        });
        let at = |path: &str| texts_at_path(&doc, path);
        assert_eq!(at("a.b"), ["nested"]);
        assert_eq!(at("arr[0].x"), ["first"]);
        assert_eq!(at("arr[-1].x"), ["last"]);
        assert_eq!(at("arr[*].x"), ["first", "last"]);
        assert_eq!(at("obj.*"), ["1", "true"]);
        assert_eq!(at("{text,a.b}"), ["hello", "nested"]);
        assert_eq!(at("n"), Vec::<String>::new());
        assert_eq!(at("empty"), ["[]"]);
        assert_eq!(at("missing.deep"), Vec::<String>::new());
        assert_eq!(at("arr[x]"), Vec::<String>::new());
        assert_eq!(at("arr[9]"), Vec::<String>::new());
        assert_eq!(
            texts_at_path(&json!({"b": 1, "a": 2}), "$"),
            [r#"{"a":2,"b":1}"#]
        );
    }
}
