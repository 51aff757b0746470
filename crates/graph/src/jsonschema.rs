//! JSON schemas of a compiled graph (LangGraph's `get_input_jsonschema`,
//! `get_output_jsonschema`, `get_context_jsonschema`): what a client may
//! send as input, what the graph returns, its whole state and its run
//! context, as JSON Schema objects shaped as pydantic writes them.

use std::marker::PhantomData;

use serde_json::{Map, Value as Json, json};
use stategraph_llm::schemars::JsonSchema;

use crate::schema::Schema;

/// What the schemas of one compiled graph are made from; each schema is
/// made when asked for (rarely: a server's schema endpoint), so compiling
/// pays only for keeping the parts.
#[derive(Clone, Debug, Default)]
pub(crate) struct GraphSchemas {
    // `None`: a graph of the functional API, whose input is any value.
    source: Option<Source>,
}

#[derive(Clone, Debug)]
struct Source {
    schema: Schema,
    input_keys: Option<Vec<String>>,
    output_keys: Option<Vec<String>>,
    context: Option<Json>,
}

impl GraphSchemas {
    /// The schemas of a state, its input and output keys (all keys when
    /// `None`), and a declared context.
    pub(crate) fn new(
        schema: Schema,
        input_keys: Option<Vec<String>>,
        output_keys: Option<Vec<String>>,
        context: Option<Json>,
    ) -> Self {
        Self {
            source: Some(Source {
                schema,
                input_keys,
                output_keys,
                context,
            }),
        }
    }

    /// The whole state's schema.
    pub(crate) fn state(&self) -> Json {
        self.object(|_| None)
    }

    /// The input keys' schema.
    pub(crate) fn input(&self) -> Json {
        self.object(|source| source.input_keys.as_deref())
    }

    /// The output keys' schema.
    pub(crate) fn output(&self) -> Json {
        self.object(|source| source.output_keys.as_deref())
    }

    /// The declared context's schema.
    pub(crate) fn context(&self) -> Option<Json> {
        self.source.as_ref()?.context.clone()
    }

    /// LangGraph's config schema: the context's, under `configurable`.
    pub(crate) fn config(&self) -> Json {
        let Some(context) = self.context() else {
            return json!({});
        };
        let title = context["title"].as_str().unwrap_or("Context").to_owned();
        json!({
            "$defs": {title.clone(): context},
            "properties": {"configurable": {"$ref": format!("#/$defs/{title}"), "default": null}},
            "title": "LangGraphConfig",
            "type": "object",
        })
    }

    /// The object schema of the keys `only` picks (all when `None`), or any
    /// value for a graph of the functional API.
    fn object(&self, only: impl Fn(&Source) -> Option<&[String]>) -> Json {
        let Some(source) = &self.source else {
            return json!({});
        };
        let keys: Vec<&str> = match only(source) {
            Some(only) => source
                .schema
                .keys()
                .filter(|k| only.iter().any(|o| o == k))
                .collect(),
            None => source.schema.keys().collect(),
        };
        object(&source.schema, &keys)
    }
}

/// An object schema of these keys: each key's declared schema with a
/// pydantic-style title, every key required (as a `TypedDict`'s are)
/// unless the schema is [partial](Schema::partial) (then, as pydantic
/// writes a `total=False` one, no `required` at all).
fn object(schema: &Schema, keys: &[&str]) -> Json {
    let mut properties = Map::new();
    for key in keys {
        let mut property = schema
            .key_json_schema(key)
            .cloned()
            .unwrap_or_else(|| json!({}));
        if let Some(map) = property.as_object_mut() {
            map.insert("title".into(), Json::String(title_case(key)));
        }
        properties.insert((*key).to_owned(), property);
    }
    let mut object = json!({
        "properties": properties,
        "required": keys,
        "title": schema.title().unwrap_or("State"),
        "type": "object",
    });
    if schema.is_partial()
        && let Some(map) = object.as_object_mut()
    {
        map.remove("required");
    }
    object
}

/// pydantic's title of a field: words split at `_`, each capitalised
/// (`user_id` → `User Id`).
pub(crate) fn title_case(key: &str) -> String {
    stategraph_llm::pydantic_title(key)
}

/// The JSON schema of `T`, inlined (no `$ref`, no `$schema`), titled with
/// the type's name, its properties titled as pydantic titles them.
pub(crate) fn titled_json_schema_of<T: JsonSchema>() -> Json {
    let mut json = stategraph_llm::inline_schema::<T>();
    if let Some(Json::Object(properties)) = json.get_mut("properties") {
        for (key, property) in properties.iter_mut() {
            if let Some(property) = property.as_object_mut() {
                property
                    .entry("title")
                    .or_insert_with(|| Json::String(title_case(key)));
            }
        }
    }
    json
}

/// The JSON schema of a field's type: [`titled_json_schema_of`] without
/// the title (the field's own title replaces it).
fn json_schema_of<T: JsonSchema>() -> Json {
    let mut json = titled_json_schema_of::<T>();
    if let Some(map) = json.as_object_mut() {
        map.remove("title");
    }
    json
}

/// The schema of a field type, chosen at compile time by the generated
/// code of `#[derive(State)]`: `T`'s own when it is `JsonSchema`
/// ([`ViaJsonSchema`], implemented one reference closer to the `&&`
/// receiver), else `{}` (any value). Not a public API.
#[doc(hidden)]
pub struct SchemaOf<T>(PhantomData<fn() -> T>);

impl<T> SchemaOf<T> {
    /// The probe for `T`.
    pub fn new() -> Self {
        Self(PhantomData)
    }
}

impl<T> Default for SchemaOf<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// The schema of a `JsonSchema` type.
#[doc(hidden)]
pub trait ViaJsonSchema {
    /// The schema.
    fn field_schema(&self) -> Json;
}

impl<T: JsonSchema> ViaJsonSchema for &SchemaOf<T> {
    fn field_schema(&self) -> Json {
        json_schema_of::<T>()
    }
}

/// Any other type: any value.
#[doc(hidden)]
pub trait ViaAnyValue {
    /// The schema.
    fn field_schema(&self) -> Json;
}

impl<T> ViaAnyValue for SchemaOf<T> {
    fn field_schema(&self) -> Json {
        json!({})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_follow_pydantic() {
        assert_eq!(title_case("user_id"), "User Id");
        assert_eq!(title_case("name"), "Name");
        assert_eq!(title_case("__private"), "Private");
    }

    // The `&&` is the dispatch under test, not a needless borrow.
    #[test]
    #[allow(clippy::needless_borrow)]
    fn field_schemas_fall_back_to_any() {
        struct Opaque;
        assert_eq!((&&SchemaOf::<u8>::new()).field_schema()["type"], "integer");
        assert_eq!((&&SchemaOf::<Opaque>::new()).field_schema(), json!({}));
    }
}
