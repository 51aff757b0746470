//! The code `#[derive(State)]` generates: the `State` impl (the schema), the
//! `{Name}Update` partial update and the `{Name}View` zero-copy read view.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, FieldsNamed};

use crate::attrs::{self, ChannelKind, FieldSpec, Reducer};

const NEEDS_NAMED_FIELDS: &str = "`#[derive(State)]` needs a struct with named fields: \
     each field is one state key (`struct Overall { subjects: Vec<String> }`)";

/// Expands `#[derive(State)]` on `input`.
pub(crate) fn derive_state(input: &DeriveInput) -> syn::Result<TokenStream> {
    let fields = named_fields(input)?;
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new(
            input.generics.span(),
            "`#[derive(State)]` does not support generic structs: a state is a concrete type \
             whose fields are stored in `'static` channels",
        ));
    }
    let options = attrs::struct_options(&input.attrs)?;

    let mut specs: Vec<FieldSpec> = Vec::new();
    let mut errors: Option<syn::Error> = None;
    for field in &fields.named {
        let result = attrs::field_spec(field, &options).and_then(|spec| {
            match specs.iter().find(|other| other.key == spec.key) {
                Some(other) => Err(syn::Error::new(
                    spec.ident.span(),
                    format!(
                        "state key {:?} is already used by field `{}`",
                        spec.key, other.ident
                    ),
                )),
                None => Ok(spec),
            }
        });
        match result {
            Ok(spec) => specs.push(spec),
            Err(err) => match &mut errors {
                Some(all) => all.combine(err),
                None => errors = Some(err),
            },
        }
    }
    if let Some(errors) = errors {
        return Err(errors);
    }
    Ok(generate(input, &options.root, options.partial, &specs))
}

fn named_fields(input: &DeriveInput) -> syn::Result<&FieldsNamed> {
    match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => Ok(named),
            Fields::Unnamed(unnamed) => Err(syn::Error::new(
                unnamed.span(),
                format!("{NEEDS_NAMED_FIELDS}; a tuple struct has no key names"),
            )),
            Fields::Unit => Err(syn::Error::new(
                input.ident.span(),
                format!("{NEEDS_NAMED_FIELDS}; a unit struct has no keys"),
            )),
        },
        Data::Enum(data) => Err(syn::Error::new(
            data.enum_token.span(),
            format!("{NEEDS_NAMED_FIELDS}; an enum cannot be a graph state"),
        )),
        Data::Union(data) => Err(syn::Error::new(
            data.union_token.span(),
            format!("{NEEDS_NAMED_FIELDS}; a union cannot be a graph state"),
        )),
    }
}

/// What a write to the key does, for the generated docs.
fn describe(kind: &ChannelKind) -> String {
    match kind {
        ChannelKind::LastValue => "replaces the value; one write per step".to_owned(),
        ChannelKind::Reducer(Reducer::Builtin(ident)) => {
            format!("folded into the value with `reducers::{ident}`")
        }
        ChannelKind::Reducer(Reducer::Custom(expr)) => {
            format!("folded into the value with `{}`", quote!(#expr))
        }
        ChannelKind::Topic {
            accumulate: false, ..
        } => "its items are published to the topic for the next step".to_owned(),
        ChannelKind::Topic {
            accumulate: true, ..
        } => "its items are appended to the topic".to_owned(),
        ChannelKind::Ephemeral => "visible for the next step only".to_owned(),
        ChannelKind::Untracked => "replaces the value; never checkpointed".to_owned(),
        ChannelKind::Any => "replaces the value; the last write of a step wins".to_owned(),
    }
}

/// The channel that stores a field, spanned at what decides its type so a
/// field type or reducer that does not fit is reported there.
fn channel(spec: &FieldSpec, p: &TokenStream) -> TokenStream {
    let ty = &spec.ty;
    let span = ty.span();
    match &spec.kind {
        ChannelKind::LastValue => quote_spanned!(span=> #p::LastValue::<#ty>::new()),
        ChannelKind::Reducer(Reducer::Builtin(ident)) => {
            // The whole path at the reducer's name, so a reducer that does not
            // fit the field type is reported there.
            let reducer = respan(quote!(#p::reducers::#ident), ident.span());
            quote_spanned!(ident.span()=> #p::BinaryOperatorAggregate::<#ty>::new(#reducer))
        }
        ChannelKind::Reducer(Reducer::Custom(expr)) => quote_spanned!(expr.span()=>
            #p::BinaryOperatorAggregate::<#ty>::new(#expr)
        ),
        ChannelKind::Topic {
            elem,
            accumulate: false,
        } => quote_spanned!(span=> #p::Topic::<#elem>::new()),
        ChannelKind::Topic {
            elem,
            accumulate: true,
        } => quote_spanned!(span=> #p::Topic::<#elem>::accumulating()),
        ChannelKind::Ephemeral => quote_spanned!(span=> #p::EphemeralValue::<#ty>::new()),
        ChannelKind::Untracked => quote_spanned!(span=> #p::UntrackedValue::<#ty>::new()),
        ChannelKind::Any => quote_spanned!(span=> #p::AnyValue::<#ty>::new()),
    }
}

/// `tokens` with every span set to `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tree| {
            if let TokenTree::Group(group) = &tree {
                let mut inner = Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                tree = TokenTree::Group(inner);
            } else {
                tree.set_span(span);
            }
            tree
        })
        .collect()
}

fn generate(
    input: &DeriveInput,
    root: &syn::Path,
    partial: bool,
    specs: &[FieldSpec],
) -> TokenStream {
    let name = &input.ident;
    let vis = &input.vis;
    let p = quote!(#root::__private);
    let update = format_ident!("{}Update", name);
    let view = format_ident!("{}View", name);
    let name_text = name.to_string();
    let partial = partial.then(|| quote!(.partial()));

    let idents: Vec<_> = specs.iter().map(|s| &s.ident).collect();
    let types: Vec<_> = specs.iter().map(|s| &s.ty).collect();
    let keys: Vec<_> = specs.iter().map(|s| s.key.as_str()).collect();
    let field_vis: Vec<_> = specs.iter().map(|s| &s.vis).collect();
    // The field's own docs, then a blank line before the generated sentence.
    let user_docs: Vec<TokenStream> = specs
        .iter()
        .map(|s| {
            let docs = &s.docs;
            if docs.is_empty() {
                TokenStream::new()
            } else {
                quote!(#(#docs)* #[doc = ""])
            }
        })
        .collect();
    let channels: Vec<_> = specs.iter().map(|s| channel(s, &p)).collect();
    let count = specs.len();

    let update_doc = format!(
        "A partial update of [`{name}`], generated by `#[derive(State)]`: return it from a \
         node. Keys left `None` are not written; the others are moved into the state \
         (never cloned)."
    );
    let update_field_docs: Vec<String> = specs
        .iter()
        .map(|s| {
            format!(
                "Writes key `{}` ({}); `None` leaves it unchanged.",
                s.key,
                describe(&s.kind)
            )
        })
        .collect();
    let builder_docs: Vec<String> = specs
        .iter()
        .map(|s| format!("Writes key `{}` ({}).", s.key, describe(&s.kind)))
        .collect();
    let view_doc = format!(
        "A read-only view of [`{name}`], generated by `#[derive(State)]`: take it as a \
         node's input. Every field is shared with the graph's channels (an `Arc`), so \
         reading the state copies nothing; a key the state does not hold (yet) reads as \
         its type's default."
    );
    let view_field_docs: Vec<String> = specs
        .iter()
        .map(|s| format!("The value of key `{}` (shared, not copied).", s.key))
        .collect();

    let locals: Vec<_> = (0..count).map(|i| format_ident!("__state_{}", i)).collect();
    let decodes: Vec<_> = specs
        .iter()
        .map(|s| {
            let ty = &s.ty;
            quote_spanned!(ty.span()=> #p::decode_key::<#ty>(__key, __value)?)
        })
        .collect();
    let defaults: Vec<_> = specs
        .iter()
        .map(|s| {
            let ty = &s.ty;
            quote_spanned!(ty.span()=> #p::default_value::<#ty>())
        })
        .collect();
    let wraps: Vec<_> = specs
        .iter()
        .map(|s| {
            let ty = &s.ty;
            quote_spanned!(ty.span()=> #p::Value::new::<#ty>)
        })
        .collect();
    let read_loop = if specs.is_empty() {
        quote!(let _ = __values;)
    } else {
        quote! {
            #( let mut #locals: ::core::option::Option<#p::Arc<#types>> = ::core::option::Option::None; )*
            for (__key, __value) in __values.iter() {
                match __key {
                    #( #keys => #locals = ::core::option::Option::Some(#decodes), )*
                    _ => {}
                }
            }
        }
    };

    quote! {
        #[doc = #update_doc]
        #[derive(::core::clone::Clone, ::core::fmt::Debug, ::core::default::Default)]
        #vis struct #update {
            #(
                #user_docs
                #[doc = #update_field_docs]
                #field_vis #idents: ::core::option::Option<#types>,
            )*
        }

        impl #update {
            #(
                #[doc = #builder_docs]
                #[must_use]
                #vis fn #idents(mut self, value: impl ::core::convert::Into<#types>) -> Self {
                    self.#idents = ::core::option::Option::Some(::core::convert::Into::into(value));
                    self
                }
            )*
        }

        impl ::core::convert::From<#name> for #update {
            fn from(state: #name) -> Self {
                Self { #( #idents: ::core::option::Option::Some(state.#idents), )* }
            }
        }

        impl ::core::convert::From<#update> for #p::ChannelValues {
            #[allow(unused_mut, unused_variables)]
            fn from(update: #update) -> Self {
                let mut values = ::std::vec::Vec::with_capacity(#count);
                #(
                    if let ::core::option::Option::Some(value) = update.#idents {
                        // One shared key per field, not an allocation per update.
                        static KEY: ::std::sync::OnceLock<#p::Arc<str>> = ::std::sync::OnceLock::new();
                        let key = ::core::clone::Clone::clone(KEY.get_or_init(|| #p::Arc::<str>::from(#keys)));
                        values.push((key, #wraps(value)));
                    }
                )*
                #p::ChannelValues::new(values)
            }
        }

        impl #p::IntoNodeOutput for #update {
            fn into_node_output(self) -> #p::NodeOutput {
                #p::NodeOutput::Value(#p::Value::new(
                    <#p::ChannelValues as ::core::convert::From<Self>>::from(self),
                ))
            }
        }

        #[doc = #view_doc]
        #[derive(::core::clone::Clone, ::core::fmt::Debug)]
        #vis struct #view {
            #(
                #user_docs
                #[doc = #view_field_docs]
                #field_vis #idents: #p::Arc<#types>,
            )*
        }

        impl #view {
            /// Clones the values into an owned state.
            #[must_use]
            #vis fn to_state(&self) -> #name {
                #name { #( #idents: ::core::clone::Clone::clone(&*self.#idents), )* }
            }

            /// Moves the values into an owned state, cloning only the values
            /// that are still shared (with the graph's channels or another view).
            #[must_use]
            #vis fn into_state(self) -> #name {
                #name { #( #idents: #p::Arc::unwrap_or_clone(self.#idents), )* }
            }
        }

        impl ::core::convert::From<#name> for #view {
            fn from(state: #name) -> Self {
                Self { #( #idents: #p::Arc::new(state.#idents), )* }
            }
        }

        impl ::core::convert::From<#view> for #name {
            fn from(view: #view) -> Self {
                view.into_state()
            }
        }

        impl #p::FromInput for #view {
            fn from_input(input: #p::Value) -> ::core::result::Result<Self, #p::NodeError> {
                // A `Send` of the state struct itself: move it in.
                let input = match input.downcast_arc::<#name>() {
                    ::core::result::Result::Ok(state) => {
                        return ::core::result::Result::Ok(match #p::Arc::try_unwrap(state) {
                            ::core::result::Result::Ok(state) => <Self as ::core::convert::From<#name>>::from(state),
                            ::core::result::Result::Err(shared) => Self {
                                #( #idents: #p::Arc::new(::core::clone::Clone::clone(&shared.#idents)), )*
                            },
                        });
                    }
                    ::core::result::Result::Err(input) => input,
                };
                let values = #p::state_values(input).map_err(#p::invalid_input)?;
                <#name as #root::State>::view(&values).map_err(#p::invalid_input)
            }
        }

        impl #root::State for #name {
            type Update = #update;
            type View = #view;

            fn schema() -> #p::Schema {
                // Each field's JSON schema: its type's own when the type is
                // `JsonSchema`, else any value (`SchemaOf`).
                #[allow(unused_imports)]
                use #p::{ViaAnyValue as _, ViaJsonSchema as _};
                #p::Schema::new()
                    .titled(#name_text)
                    #partial
                    #( .key(#keys, #channels) )*
                    #( .describe(#keys, (&&#p::SchemaOf::<#types>::new()).field_schema()) )*
            }

            fn view(__values: &#p::ChannelValues) -> ::core::result::Result<#view, #p::ValueError> {
                #read_loop
                ::core::result::Result::Ok(#view {
                    #(
                        #idents: match #locals {
                            ::core::option::Option::Some(value) => value,
                            ::core::option::Option::None => #defaults,
                        },
                    )*
                })
            }

            fn update(__values: &#p::ChannelValues) -> ::core::result::Result<#update, #p::ValueError> {
                #read_loop
                ::core::result::Result::Ok(#update {
                    #( #idents: #locals.map(#p::Arc::unwrap_or_clone), )*
                })
            }
        }

        /// Writes only the fields set.
        impl #root::TypedInput<#name> for #update {
            fn into_input(self) -> #p::Input {
                #p::Input::Value(#p::Value::new(
                    <#p::ChannelValues as ::core::convert::From<Self>>::from(self),
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use syn::parse_quote;

    use super::*;

    fn error_of(input: DeriveInput) -> String {
        match derive_state(&input) {
            Ok(tokens) => panic!("expected an error, got {tokens}"),
            Err(err) => err.to_string(),
        }
    }

    #[test]
    fn tuple_structs_are_rejected_with_a_clear_message() {
        let input: DeriveInput = parse_quote!(
            struct Overall(Vec<String>, u32);
        );
        let err = derive_state(&input).err();
        let err = err.as_ref().map(ToString::to_string).unwrap_or_default();
        assert!(err.contains("needs a struct with named fields"), "{err}");
        assert!(err.contains("tuple struct"), "{err}");
    }

    #[test]
    fn other_shapes_are_rejected() {
        assert!(
            error_of(parse_quote!(
                struct Unit;
            ))
            .contains("unit struct")
        );
        assert!(
            error_of(parse_quote!(
                enum E {
                    A,
                }
            ))
            .contains("an enum")
        );
        assert!(
            error_of(parse_quote!(
                struct G<T> {
                    t: T,
                }
            ))
            .contains("does not support generic")
        );
    }

    #[test]
    fn bad_field_options_are_rejected() {
        let err = error_of(parse_quote!(
            struct S {
                #[state(reducer = append, channel = "topic")]
                a: Vec<u8>,
            }
        ));
        assert!(err.contains("cannot be combined"), "{err}");
        let err = error_of(parse_quote!(
            struct S {
                #[state(channel = "topic")]
                a: String,
            }
        ));
        assert!(err.contains("needs a field of type `Vec<T>`"), "{err}");
        let err = error_of(parse_quote!(
            struct S {
                #[state(channel = "lastvalue")]
                a: String,
            }
        ));
        assert!(err.contains("unknown channel"), "{err}");
        let err = error_of(parse_quote!(
            struct S {
                #[state(accumulate)]
                a: Vec<String>,
            }
        ));
        assert!(err.contains("only applies to"), "{err}");
        let err = error_of(parse_quote!(
            struct S {
                #[state(reduce = append)]
                a: Vec<String>,
            }
        ));
        assert!(err.contains("unknown `state` option"), "{err}");
        let err = error_of(parse_quote!(
            struct S {
                #[serde(flatten)]
                a: Inner,
            }
        ));
        assert!(err.contains("flatten"), "{err}");
        let err = error_of(parse_quote!(
            struct S {
                default: u8,
            }
        ));
        assert!(err.contains("cannot be named `default`"), "{err}");
    }

    #[test]
    fn duplicate_keys_are_rejected_and_errors_are_collected() {
        let err = derive_state(&parse_quote!(
            struct S {
                a: u8,
                #[serde(rename = "a")]
                b: u8,
                #[state(channel = "nope")]
                c: u8,
            }
        ))
        .err();
        let messages: Vec<String> = err.into_iter().flatten().map(|e| e.to_string()).collect();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(messages[0].contains("already used by field `a`"));
        assert!(messages[1].contains("unknown channel"));
    }

    #[test]
    fn keys_follow_serde_names() {
        let input: DeriveInput = parse_quote!(
            #[serde(rename_all = "camelCase", deny_unknown_fields)]
            struct S {
                user_name: String,
                #[serde(rename = "ID", default)]
                id: u64,
                #[serde(skip_serializing_if = "Vec::is_empty")]
                r#type: Vec<u8>,
            }
        );
        let tokens = derive_state(&input)
            .map(|t| t.to_string())
            .unwrap_or_default();
        for key in ["\"userName\"", "\"ID\"", "\"type\""] {
            assert!(tokens.contains(key), "{key} missing from {tokens}");
        }
    }

    #[test]
    fn rename_rules_match_serde() {
        use attrs::RenameRule::*;
        let field = "user_name_2";
        let cases = [
            (Lower, "user_name_2"),
            (Upper, "USER_NAME_2"),
            (Pascal, "UserName2"),
            (Camel, "userName2"),
            (Snake, "user_name_2"),
            (ScreamingSnake, "USER_NAME_2"),
            (Kebab, "user-name-2"),
            (ScreamingKebab, "USER-NAME-2"),
        ];
        for (rule, expected) in cases {
            assert_eq!(rule.apply(field), expected, "{rule:?}");
        }
    }

    #[test]
    fn the_root_path_can_be_overridden() {
        let input: DeriveInput = parse_quote!(
            #[state(crate = "stategraph::graph")]
            pub struct S {
                #[state(reducer = append)]
                pub a: Vec<u8>,
                #[state(reducer = my::longest)]
                b: String,
            }
        );
        let tokens = derive_state(&input)
            .map(|t| t.to_string())
            .unwrap_or_default();
        assert!(tokens.contains("stategraph :: graph :: __private :: reducers :: append"));
        assert!(tokens.contains("BinaryOperatorAggregate :: < String > :: new (my :: longest)"));
        assert!(tokens.contains("impl stategraph :: graph :: State for S"));
        assert!(!tokens.contains("stategraph_graph"));
    }
}
