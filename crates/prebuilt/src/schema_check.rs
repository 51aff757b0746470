//! A small JSON-schema checker for tool-call arguments: enough of draft
//! 2020-12 for the schemas `schemars` derives and tools declare by hand.
//!
//! Checked keywords: `type`, `enum`, `const`, `required`, `properties`,
//! `additionalProperties`, `items`, `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum`, `minItems`, `maxItems`, `minLength`, `maxLength`,
//! `anyOf`, `oneOf`, `allOf` and local `$ref`s (`#/$defs/...`,
//! `#/definitions/...`, `#`). Other keywords are ignored, so a schema using
//! them accepts more than it says, never less.

use serde_json::{Map, Value as Json};

use crate::validation::ArgIssue;

/// How deep `$ref`s may nest before the checker gives up (a guard against
/// self-referencing schemas applied to deep input).
const MAX_DEPTH: usize = 64;

/// Every problem of `value` against `schema`, located from the root.
pub(crate) fn check(schema: &Json, value: &Json) -> Vec<ArgIssue> {
    let mut checker = Checker {
        root: schema,
        issues: Vec::new(),
    };
    checker.check(schema, value, &mut Vec::new(), 0);
    checker.issues
}

/// Whether a number satisfies a bound.
type Holds = fn(f64, f64) -> bool;

struct Checker<'a> {
    root: &'a Json,
    issues: Vec<ArgIssue>,
}

impl<'a> Checker<'a> {
    fn issue(&mut self, loc: &[String], message: impl Into<String>) {
        self.issues.push(ArgIssue::new(loc.to_vec(), message));
    }

    /// A problem pydantic reports as `kind`, about `input`.
    fn typed_issue(
        &mut self,
        loc: &[String],
        message: impl Into<String>,
        kind: &str,
        input: &Json,
    ) {
        self.issues
            .push(ArgIssue::new(loc.to_vec(), message).with_details(kind, input.clone()));
    }

    fn check(&mut self, schema: &'a Json, value: &Json, loc: &mut Vec<String>, depth: usize) {
        let schema = match schema {
            Json::Bool(true) => return,
            Json::Bool(false) => return self.issue(loc, "No input is allowed here"),
            Json::Object(schema) => schema,
            // Not a schema: nothing to check against.
            _ => return,
        };
        if depth > MAX_DEPTH {
            return self.issue(loc, "Input is nested too deeply to check");
        }
        if let Some(target) = schema.get("$ref").and_then(Json::as_str) {
            match self.resolve(target) {
                Some(target) => self.check(target, value, loc, depth + 1),
                None => self.issue(loc, format!("Schema reference {target} cannot be resolved")),
            }
        }
        if let Some(Json::Array(parts)) = schema.get("allOf") {
            for part in parts {
                self.check(part, value, loc, depth + 1);
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Json::Array(branches)) = schema.get(key) {
                self.any_of(branches, value, loc, depth);
            }
        }
        if let Some(expected) = schema.get("type")
            && !type_matches(expected, value)
        {
            // The other keywords describe a value of the right type.
            // Pydantic checks the arguments as a whole as a model.
            let kind = match type_kind(expected) {
                "dict_type" if loc.is_empty() => "model_type",
                kind => kind,
            };
            return self.typed_issue(loc, type_message(expected), kind, value);
        }
        if let Some(expected) = schema.get("const")
            && expected != value
        {
            let message = format!("Input should be {}", literal(expected));
            self.typed_issue(loc, message, "literal_error", value);
        }
        if let Some(Json::Array(allowed)) = schema.get("enum")
            && !allowed.contains(value)
        {
            self.typed_issue(loc, enum_message(allowed), "enum", value);
        }
        self.bounds(schema, value, loc);
        match value {
            Json::Object(map) => self.object(schema, map, loc, depth),
            Json::Array(items) => {
                if let Some(item_schema) = schema.get("items") {
                    for (i, item) in items.iter().enumerate() {
                        loc.push(i.to_string());
                        self.check(item_schema, item, loc, depth + 1);
                        loc.pop();
                    }
                }
            }
            _ => {}
        }
    }

    /// `anyOf` / `oneOf`: fine when some branch accepts the value;
    /// otherwise the problems of the branch that came closest.
    fn any_of(&mut self, branches: &'a [Json], value: &Json, loc: &mut Vec<String>, depth: usize) {
        let mut best: Option<Vec<ArgIssue>> = None;
        for branch in branches {
            let mut sub = Checker {
                root: self.root,
                issues: Vec::new(),
            };
            sub.check(branch, value, loc, depth + 1);
            if sub.issues.is_empty() {
                return;
            }
            if best.as_ref().is_none_or(|b| sub.issues.len() < b.len()) {
                best = Some(sub.issues);
            }
        }
        self.issues.extend(best.unwrap_or_default());
    }

    fn object(
        &mut self,
        schema: &'a Map<String, Json>,
        map: &Map<String, Json>,
        loc: &mut Vec<String>,
        depth: usize,
    ) {
        let properties = schema.get("properties").and_then(Json::as_object);
        if let Some(Json::Array(required)) = schema.get("required") {
            for name in required.iter().filter_map(Json::as_str) {
                if !map.contains_key(name) {
                    loc.push(name.to_owned());
                    // Pydantic's input for a missing field: the object.
                    let object = Json::Object(map.clone());
                    self.typed_issue(loc, "Field required", "missing", &object);
                    loc.pop();
                }
            }
        }
        for (key, item) in map {
            loc.push(key.clone());
            match properties.and_then(|p| p.get(key)) {
                Some(property) => self.check(property, item, loc, depth + 1),
                None => match schema.get("additionalProperties") {
                    Some(Json::Bool(false)) => {
                        self.typed_issue(
                            loc,
                            "Extra inputs are not permitted",
                            "extra_forbidden",
                            item,
                        );
                    }
                    Some(extra) => self.check(extra, item, loc, depth + 1),
                    None => {}
                },
            }
            loc.pop();
        }
    }

    fn bounds(&mut self, schema: &Map<String, Json>, value: &Json, loc: &[String]) {
        let bound = |key: &str| schema.get(key).and_then(Json::as_f64);
        if let Some(n) = value.as_f64() {
            let checks: [(&str, Holds, &str, &str); 4] = [
                (
                    "minimum",
                    |n, b| n >= b,
                    "greater than or equal to",
                    "greater_than_equal",
                ),
                (
                    "maximum",
                    |n, b| n <= b,
                    "less than or equal to",
                    "less_than_equal",
                ),
                (
                    "exclusiveMinimum",
                    |n, b| n > b,
                    "greater than",
                    "greater_than",
                ),
                ("exclusiveMaximum", |n, b| n < b, "less than", "less_than"),
            ];
            for (key, ok, words, kind) in checks {
                if let (Some(b), Some(raw)) = (bound(key), schema.get(key))
                    && !ok(n, b)
                {
                    self.typed_issue(loc, format!("Input should be {words} {raw}"), kind, value);
                }
            }
        }
        let (len, unit) = match value {
            Json::Array(items) => (items.len(), "item"),
            Json::String(text) => (text.chars().count(), "character"),
            _ => return,
        };
        let (min_key, max_key, short, long) = if unit == "item" {
            ("minItems", "maxItems", "too_short", "too_long")
        } else {
            (
                "minLength",
                "maxLength",
                "string_too_short",
                "string_too_long",
            )
        };
        let plural = |n: u64| if n == 1 { "" } else { "s" };
        if let Some(min) = schema.get(min_key).and_then(Json::as_u64)
            && (len as u64) < min
        {
            let s = plural(min);
            let message = format!("Input should have at least {min} {unit}{s}");
            self.typed_issue(loc, message, short, value);
        }
        if let Some(max) = schema.get(max_key).and_then(Json::as_u64)
            && (len as u64) > max
        {
            let s = plural(max);
            let message = format!("Input should have at most {max} {unit}{s}");
            self.typed_issue(loc, message, long, value);
        }
    }

    /// The schema a local `$ref` points to.
    fn resolve(&self, target: &str) -> Option<&'a Json> {
        let pointer = target.strip_prefix('#')?;
        self.root.pointer(pointer)
    }
}

fn type_matches(expected: &Json, value: &Json) -> bool {
    match expected {
        Json::String(name) => is_type(name, value),
        Json::Array(names) => names
            .iter()
            .filter_map(Json::as_str)
            .any(|name| is_type(name, value)),
        _ => true,
    }
}

fn is_type(name: &str, value: &Json) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|n| n.fract() == 0.0)
        }
        // An unknown type name constrains nothing.
        _ => true,
    }
}

/// Pydantic's error type for a value of the wrong type: that of the first
/// type named that is not `null` (pydantic reports an optional value's
/// problem as its type's).
fn type_kind(expected: &Json) -> &'static str {
    let first = match expected {
        Json::String(name) => Some(name.as_str()),
        Json::Array(names) => names
            .iter()
            .filter_map(Json::as_str)
            .find(|name| *name != "null")
            .or(Some("null")),
        _ => None,
    };
    match first {
        Some("null") => "none_required",
        Some("boolean") => "bool_type",
        Some("string") => "string_type",
        Some("array") => "list_type",
        Some("object") => "dict_type",
        Some("number") => "float_type",
        Some("integer") => "int_type",
        _ => "type_error",
    }
}

/// Pydantic's wording for a value of the wrong type.
fn type_message(expected: &Json) -> String {
    fn noun(name: &str) -> &str {
        match name {
            "null" => "None",
            "boolean" => "a valid boolean",
            "string" => "a valid string",
            "array" => "a valid list",
            "object" => "a valid dictionary",
            "number" => "a valid number",
            "integer" => "a valid integer",
            other => other,
        }
    }
    let names: Vec<&str> = match expected {
        Json::String(name) => vec![noun(name)],
        Json::Array(names) => names.iter().filter_map(Json::as_str).map(noun).collect(),
        _ => Vec::new(),
    };
    format!("Input should be {}", or_list(&names))
}

fn enum_message(allowed: &[Json]) -> String {
    let names: Vec<String> = allowed.iter().map(literal).collect();
    let names: Vec<&str> = names.iter().map(|name| name.as_str()).collect();
    format!("Input should be {}", or_list(&names))
}

/// `'a'` for strings (as pydantic quotes them), the JSON text otherwise.
fn literal(value: &Json) -> String {
    match value {
        Json::String(text) => format!("'{text}'"),
        other => other.to_string(),
    }
}

/// `a`, `a or b`, `a, b or c`.
fn or_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(schema: Json, value: Json) -> Vec<(String, String)> {
        check(&schema, &value)
            .into_iter()
            .map(|issue| (issue.loc.join("."), issue.message))
            .collect()
    }

    #[test]
    fn types_required_and_extra_properties() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "string"}}},
            "required": ["a"],
            "additionalProperties": false,
        });
        assert!(messages(schema.clone(), json!({"a": 1, "b": ["x"]})).is_empty());
        assert_eq!(
            messages(schema.clone(), json!({"b": [1], "c": true})),
            [
                ("a".into(), "Field required".into()),
                ("b.0".into(), "Input should be a valid string".into()),
                ("c".into(), "Extra inputs are not permitted".into()),
            ]
        );
        assert_eq!(
            messages(schema, json!("x")),
            [("".into(), "Input should be a valid dictionary".into())]
        );
    }

    #[test]
    fn enums_bounds_refs_and_optional_values() {
        let schema = json!({
            "type": "object",
            "properties": {
                "mode": {"$ref": "#/$defs/Mode"},
                "n": {"type": ["integer", "null"], "minimum": 0},
                "inner": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]},
            },
            "$defs": {
                "Mode": {"type": "string", "enum": ["fast", "slow"]},
                "Inner": {"type": "object", "properties": {"x": {"type": "boolean"}}, "required": ["x"]},
            },
        });
        assert!(
            messages(
                schema.clone(),
                json!({"mode": "fast", "n": null, "inner": null})
            )
            .is_empty()
        );
        assert_eq!(
            messages(schema, json!({"mode": "other", "n": -1, "inner": {"x": 1}})),
            [
                ("inner.x".into(), "Input should be a valid boolean".into()),
                ("mode".into(), "Input should be 'fast' or 'slow'".into()),
                (
                    "n".into(),
                    "Input should be greater than or equal to 0".into()
                ),
            ]
        );
    }

    #[test]
    fn unresolvable_refs_and_boolean_schemas() {
        assert_eq!(
            messages(json!({"$ref": "#/$defs/Nope"}), json!(1)),
            [(
                "".into(),
                "Schema reference #/$defs/Nope cannot be resolved".into()
            )]
        );
        assert!(messages(json!(true), json!(1)).is_empty());
        assert_eq!(messages(json!(false), json!(1)).len(), 1);
        assert_eq!(
            messages(json!({"type": "string", "maxLength": 2}), json!("abc")),
            [("".into(), "Input should have at most 2 characters".into())]
        );
    }
}
