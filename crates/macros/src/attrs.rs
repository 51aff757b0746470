//! Parsing of the `#[state(...)]` attributes and of the `#[serde(...)]`
//! attributes that decide a field's key.

use proc_macro2::{Span, TokenStream};
use syn::ext::IdentExt;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, Field, GenericArgument, Ident, LitStr, Path, PathArguments, Type};

/// The reducers `#[state(reducer = name)]` resolves in `stategraph_channels::reducers`.
const BUILTIN_REDUCERS: &[&str] = &["append", "add", "merge", "replace"];

/// The channel kinds `#[state(channel = "...")]` accepts.
const CHANNELS: &str = r#""last_value", "topic", "ephemeral", "untracked" or "any""#;

/// Field names whose builder method would hide a trait method every update
/// type has (`OverallUpdate::default()`, `update.clone()`, ...).
const RESERVED: &[&str] = &["default", "clone", "clone_from", "fmt", "from", "into"];

/// What the struct-level attributes say.
pub(crate) struct StructOptions {
    /// The path of the graph crate in the generated code.
    pub(crate) root: Path,
    /// serde's `rename_all`, applied to fields without their own `rename`.
    pub(crate) rename_all: Option<RenameRule>,
    /// `#[state(partial)]`: no key required in the JSON schemas.
    pub(crate) partial: bool,
}

/// Reads `#[state(crate = "path")]`, `#[state(partial)]` and
/// `#[serde(rename_all = "...")]`.
pub(crate) fn struct_options(attrs: &[Attribute]) -> syn::Result<StructOptions> {
    let mut root = None;
    let mut partial = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident("state")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("partial") {
                partial = true;
                Ok(())
            } else if meta.path.is_ident("crate") {
                if root.is_some() {
                    return Err(meta.error("duplicate `crate` option"));
                }
                let lit: LitStr = meta.value()?.parse()?;
                root = Some(lit.parse::<Path>()?);
                Ok(())
            } else if meta.path.is_ident("reducer")
                || meta.path.is_ident("channel")
                || meta.path.is_ident("accumulate")
            {
                Err(meta.error(
                    "this `state` option belongs on a field; on the struct only `crate = \"path\"` and `partial` are accepted",
                ))
            } else {
                Err(meta.error(
                    "unknown `state` option on the struct; expected `crate = \"path\"` or `partial`",
                ))
            }
        })?;
    }
    let mut rename_all = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename_all") {
                let (name, span) = one_name(&meta, "rename_all")?;
                rename_all = Some(RenameRule::parse(&name, span)?);
                Ok(())
            } else {
                skip_value(&meta)
            }
        })?;
    }
    Ok(StructOptions {
        root: root.unwrap_or_else(|| crate::root::GRAPH.path()),
        rename_all,
        partial,
    })
}

/// How a field's key is stored.
pub(crate) enum ChannelKind {
    /// `LastValue<T>`: one write per step, last value wins.
    LastValue,
    /// `BinaryOperatorAggregate<T>` folding writes with a reducer.
    Reducer(Reducer),
    /// `Topic<Elem>` for a `Vec<Elem>` field.
    Topic {
        /// The element type.
        elem: Type,
        /// Keep writes across steps (`Topic::accumulating`).
        accumulate: bool,
    },
    /// `EphemeralValue<T>`: lives one step.
    Ephemeral,
    /// `UntrackedValue<T>`: never checkpointed.
    Untracked,
    /// `AnyValue<T>`: last of any number of writes.
    Any,
}

/// The reducer of a reducer key.
pub(crate) enum Reducer {
    /// One of `stategraph_channels::reducers`.
    Builtin(Ident),
    /// Any expression of type `Fn(T, T) -> T` (usually a path).
    Custom(Expr),
}

/// One field of the state struct, resolved.
pub(crate) struct FieldSpec {
    /// The field's name.
    pub(crate) ident: Ident,
    /// The field's visibility.
    pub(crate) vis: syn::Visibility,
    /// The field's type.
    pub(crate) ty: Type,
    /// The state key (the serialized name).
    pub(crate) key: String,
    /// The channel that stores the key.
    pub(crate) kind: ChannelKind,
    /// The field's own doc attributes.
    pub(crate) docs: Vec<Attribute>,
}

/// Resolves one named field.
pub(crate) fn field_spec(field: &Field, options: &StructOptions) -> syn::Result<FieldSpec> {
    let Some(ident) = field.ident.clone() else {
        return Err(syn::Error::new(field.span(), "expected a named field"));
    };
    let name = ident.unraw().to_string();
    if RESERVED.contains(&name.as_str()) {
        return Err(syn::Error::new(
            ident.span(),
            format!(
                "a state field cannot be named `{name}`: its update builder method would hide `{name}` of a standard trait; \
                 rename the field and keep the key with `#[serde(rename = \"{name}\")]`"
            ),
        ));
    }

    let mut reducer = None;
    let mut channel: Option<(String, Span)> = None;
    let mut accumulate = None;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("state")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("reducer") {
                if reducer.is_some() {
                    return Err(meta.error("duplicate `reducer` option"));
                }
                let expr: Expr = meta.value()?.parse()?;
                reducer = Some(resolve_reducer(expr));
                Ok(())
            } else if meta.path.is_ident("channel") {
                if channel.is_some() {
                    return Err(meta.error("duplicate `channel` option"));
                }
                let lit: LitStr = meta.value()?.parse()?;
                channel = Some((lit.value(), lit.span()));
                Ok(())
            } else if meta.path.is_ident("accumulate") {
                accumulate = Some(meta.path.span());
                Ok(())
            } else if meta.path.is_ident("crate") {
                Err(meta.error("`crate = \"path\"` belongs on the struct, not on a field"))
            } else {
                Err(meta.error(
                    "unknown `state` option; expected `reducer = path`, `channel = \"...\"` or `accumulate`",
                ))
            }
        })?;
    }

    let kind = match (reducer, channel) {
        (Some(_), Some((_, span))) => {
            return Err(syn::Error::new(
                span,
                "`reducer` and `channel` cannot be combined: a reducer key is stored in its own channel",
            ));
        }
        (Some(reducer), None) => ChannelKind::Reducer(reducer),
        (None, None) => ChannelKind::LastValue,
        (None, Some((name, span))) => match name.as_str() {
            "last_value" => ChannelKind::LastValue,
            "topic" => ChannelKind::Topic {
                elem: vec_element(&field.ty)?,
                accumulate: accumulate.take().is_some(),
            },
            "ephemeral" => ChannelKind::Ephemeral,
            "untracked" => ChannelKind::Untracked,
            "any" => ChannelKind::Any,
            other => {
                return Err(syn::Error::new(
                    span,
                    format!("unknown channel {other:?}; expected {CHANNELS}"),
                ));
            }
        },
    };
    if let Some(span) = accumulate {
        return Err(syn::Error::new(
            span,
            "`accumulate` only applies to `channel = \"topic\"`",
        ));
    }

    let mut key = None;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                key = Some(one_name(&meta, "rename")?.0);
                Ok(())
            } else if meta.path.is_ident("flatten") {
                Err(meta.error(
                    "`#[derive(State)]` does not support `#[serde(flatten)]`: every field is one state key",
                ))
            } else if meta.path.is_ident("skip")
                || meta.path.is_ident("skip_serializing")
                || meta.path.is_ident("skip_deserializing")
            {
                Err(meta.error(
                    "`#[derive(State)]` does not support skipped fields: every field is a state key, \
                     written to and read from its channel (move the field out of the state struct)",
                ))
            } else {
                skip_value(&meta)
            }
        })?;
    }
    let key = match (key, &options.rename_all) {
        (Some(key), _) => key,
        (None, Some(rule)) => rule.apply(&name),
        (None, None) => name,
    };

    Ok(FieldSpec {
        ident,
        vis: field.vis.clone(),
        ty: field.ty.clone(),
        key,
        kind,
        docs: field
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("doc"))
            .cloned()
            .collect(),
    })
}

fn resolve_reducer(expr: Expr) -> Reducer {
    if let Expr::Path(path) = &expr
        && path.qself.is_none()
        && path.attrs.is_empty()
        && let Some(ident) = path.path.get_ident()
        && BUILTIN_REDUCERS.contains(&ident.to_string().as_str())
    {
        return Reducer::Builtin(ident.clone());
    }
    Reducer::Custom(expr)
}

/// `Elem` of a `Vec<Elem>` field (a topic key).
fn vec_element(ty: &Type) -> syn::Result<Type> {
    if let Type::Path(path) = ty
        && path.qself.is_none()
        && let Some(last) = path.path.segments.last()
        && last.ident == "Vec"
        && let PathArguments::AngleBracketed(args) = &last.arguments
        && args.args.len() == 1
        && let Some(GenericArgument::Type(elem)) = args.args.first()
    {
        return Ok(elem.clone());
    }
    Err(syn::Error::new(
        ty.span(),
        "`channel = \"topic\"` needs a field of type `Vec<T>` (the topic's items)",
    ))
}

/// The name (and its span) of `rename = "x"` or
/// `rename(serialize = "x", deserialize = "x")`.
fn one_name(meta: &ParseNestedMeta<'_>, what: &str) -> syn::Result<(String, Span)> {
    if meta.input.peek(syn::Token![=]) {
        let lit: LitStr = meta.value()?.parse()?;
        return Ok((lit.value(), lit.span()));
    }
    let mut serialize: Option<LitStr> = None;
    let mut deserialize: Option<LitStr> = None;
    meta.parse_nested_meta(|inner| {
        let lit: LitStr = inner.value()?.parse()?;
        if inner.path.is_ident("serialize") {
            serialize = Some(lit);
        } else if inner.path.is_ident("deserialize") {
            deserialize = Some(lit);
        }
        Ok(())
    })?;
    match (serialize, deserialize) {
        (Some(a), Some(b)) if a.value() != b.value() => Err(syn::Error::new(
            b.span(),
            format!(
                "`#[derive(State)]` needs one name per key: `{what}` gives different serialize ({:?}) and deserialize ({:?}) names",
                a.value(),
                b.value()
            ),
        )),
        (Some(lit), _) | (None, Some(lit)) => Ok((lit.value(), lit.span())),
        (None, None) => Err(meta.error(format!("`{what}` names nothing"))),
    }
}

/// Consumes the value of a serde option this derive does not need.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<TokenStream>()?;
    }
    Ok(())
}

/// serde's `rename_all` rules, applied to snake_case field names.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum RenameRule {
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

impl RenameRule {
    fn parse(name: &str, span: Span) -> syn::Result<Self> {
        Ok(match name {
            "lowercase" => Self::Lower,
            "UPPERCASE" => Self::Upper,
            "PascalCase" => Self::Pascal,
            "camelCase" => Self::Camel,
            "snake_case" => Self::Snake,
            "SCREAMING_SNAKE_CASE" => Self::ScreamingSnake,
            "kebab-case" => Self::Kebab,
            "SCREAMING-KEBAB-CASE" => Self::ScreamingKebab,
            other => {
                return Err(syn::Error::new(
                    span,
                    format!(
                        "unknown serde rename_all rule {other:?}; expected \"lowercase\", \"UPPERCASE\", \"PascalCase\", \"camelCase\", \"snake_case\", \"SCREAMING_SNAKE_CASE\", \"kebab-case\" or \"SCREAMING-KEBAB-CASE\""
                    ),
                ));
            }
        })
    }

    /// The key of a field named `field`.
    pub(crate) fn apply(self, field: &str) -> String {
        match self {
            Self::Lower | Self::Snake => field.to_owned(),
            Self::Upper | Self::ScreamingSnake => field.to_ascii_uppercase(),
            Self::Pascal => {
                let mut out = String::new();
                let mut upper = true;
                for ch in field.chars() {
                    if ch == '_' {
                        upper = true;
                    } else if upper {
                        out.push(ch.to_ascii_uppercase());
                        upper = false;
                    } else {
                        out.push(ch);
                    }
                }
                out
            }
            Self::Camel => {
                let pascal = Self::Pascal.apply(field);
                let mut chars = pascal.chars();
                chars.next().map_or_else(String::new, |first| {
                    first.to_ascii_lowercase().to_string() + chars.as_str()
                })
            }
            Self::Kebab => field.replace('_', "-"),
            Self::ScreamingKebab => field.to_ascii_uppercase().replace('_', "-"),
        }
    }
}
