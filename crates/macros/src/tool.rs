//! `#[tool]`: parsing of the function and its options, and the `Tool` impl
//! it generates.
//!
//! For `async fn add(a: i64, b: i64)` the expansion is the function itself
//! (minus the parameter attributes only the macro reads), a unit struct
//! `AddTool` and, inside a `const _` block so nothing else leaks into the
//! caller's namespace, a schema-only struct of the arguments and
//! `impl Tool for AddTool`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, ExprLit, FnArg, Ident, ItemFn, Lit, LitStr, Meta, Pat, Path, ReturnType,
    Signature, Type,
};

/// The options `#[tool(...)]` accepts, for error messages.
const OPTIONS: &str =
    r#"`name = "..."`, `description = "..."`, `return_direct` or `crate = "path"`"#;

/// The sources `#[inject(...)]` accepts, for error messages.
const INJECT_SOURCES: &str = r#"`state`, `state = "key"` or `tool_call_id`"#;

/// Expands `#[tool(attr)] item`. On an error the function is still emitted
/// (without the attributes only the macro understands), so the error is the
/// only one reported rather than one more per use of the function.
pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut item: ItemFn = match syn::parse2(item) {
        Ok(item) => item,
        Err(err) => return err.into_compile_error(),
    };
    let spec = spec(attr, &item);
    strip_param_attrs(&mut item.sig);
    match spec {
        Ok(spec) => {
            let generated = generate(&spec, &item.sig.ident);
            quote!(#item #generated)
        }
        Err(err) => {
            let err = err.into_compile_error();
            quote!(#item #err)
        }
    }
}

/// Everything the generated code needs, resolved and checked.
struct ToolSpec {
    /// The path of the llm crate in the generated code.
    krate: Path,
    /// The name the model calls the tool by.
    name: String,
    /// What the tool does, for the model.
    description: String,
    /// Whether a tool node should stop after this tool.
    return_direct: bool,
    /// The function's visibility, given to the tool struct.
    vis: syn::Visibility,
    /// The parameters, in order.
    params: Vec<Param>,
    /// How the function's result becomes a `ToolOutput`.
    output: Output,
}

/// What `#[tool(...)]` says.
#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    description: Option<LitStr>,
    return_direct: bool,
    krate: Option<Path>,
}

/// One parameter of the function.
enum Param {
    /// An argument read from the call's JSON arguments: given by the model,
    /// or filled in by the caller when `inject` is set.
    Arg {
        ident: Ident,
        /// The property name in the schema (the identifier without `r#`).
        key: String,
        ty: Box<Type>,
        docs: Vec<Attribute>,
        inject: Option<Inject>,
    },
    /// The call's `ToolContext`.
    Context,
}

/// Where an injected argument comes from (the JSON sources of `Injected`).
enum Inject {
    State,
    StateKey(LitStr),
    ToolCallId,
}

/// How the function's result becomes a `ToolOutput`.
enum Output {
    /// `Result<O, E>` (or an alias named `Result`): `O` converts into the
    /// output, `E` into the `ToolError`.
    Fallible(Type),
    /// Any other type converts into the output; the tool never fails after
    /// its arguments are read.
    Infallible(Type),
}

fn spec(attr: TokenStream, item: &ItemFn) -> syn::Result<ToolSpec> {
    let mut options = Options::default();
    syn::meta::parser(|meta| parse_option(&mut options, &meta)).parse2(attr)?;
    check_signature(&item.sig)?;
    let params = params(&item.sig)?;
    let output = output(&item.sig)?;
    let name = match &options.name {
        Some(lit) if lit.value().trim().is_empty() => {
            return Err(syn::Error::new(lit.span(), "the tool name cannot be empty"));
        }
        Some(lit) => lit.value(),
        None => item.sig.ident.unraw().to_string(),
    };
    let description = match &options.description {
        Some(lit) => Some((lit.value().trim().to_owned(), lit.span())),
        None => doc_text(&item.attrs)?.map(|text| (text, item.sig.ident.span())),
    };
    let description = match description {
        Some((text, _)) if !text.is_empty() => text,
        Some((_, span)) => {
            return Err(syn::Error::new(
                span,
                "the tool description cannot be empty",
            ));
        }
        None => {
            return Err(syn::Error::new(
                item.sig.ident.span(),
                "a tool needs a description for the model: add a doc comment to the function \
                 or `#[tool(description = \"...\")]`",
            ));
        }
    };
    Ok(ToolSpec {
        krate: options.krate.unwrap_or_else(|| crate::root::LLM.path()),
        name,
        description,
        return_direct: options.return_direct,
        vis: item.vis.clone(),
        params,
        output,
    })
}

fn parse_option(options: &mut Options, meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
    let duplicate = || meta.error("duplicate `tool` option");
    if meta.path.is_ident("name") {
        if options.name.is_some() {
            return Err(duplicate());
        }
        options.name = Some(meta.value()?.parse()?);
    } else if meta.path.is_ident("description") {
        if options.description.is_some() {
            return Err(duplicate());
        }
        options.description = Some(meta.value()?.parse()?);
    } else if meta.path.is_ident("return_direct") {
        if options.return_direct {
            return Err(duplicate());
        }
        options.return_direct = true;
    } else if meta.path.is_ident("crate") {
        if options.krate.is_some() {
            return Err(duplicate());
        }
        let lit: LitStr = meta.value()?.parse()?;
        options.krate = Some(lit.parse()?);
    } else {
        return Err(meta.error(format!("unknown `tool` option; expected {OPTIONS}")));
    }
    Ok(())
}

/// Rejects what the generated `call` cannot run: sync, unsafe and generic
/// functions, and methods.
fn check_signature(sig: &Signature) -> syn::Result<()> {
    if sig.asyncness.is_none() {
        return Err(syn::Error::new(
            sig.fn_token.span(),
            "`#[tool]` needs an `async fn`: the tool's `call` awaits it",
        ));
    }
    if let Some(unsafety) = &sig.unsafety {
        return Err(syn::Error::new(
            unsafety.span(),
            "`#[tool]` cannot call an `unsafe fn` for the model",
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "`#[tool]` does not support generic functions: the tool's argument schema is fixed \
             at compile time",
        ));
    }
    if let Some(receiver) = sig.receiver() {
        return Err(syn::Error::new(
            receiver.span(),
            "`#[tool]` needs a free function, not a method taking `self`",
        ));
    }
    Ok(())
}

fn params(sig: &Signature) -> syn::Result<Vec<Param>> {
    let mut params = Vec::new();
    let mut context: Option<Span> = None;
    let mut errors: Option<syn::Error> = None;
    for input in &sig.inputs {
        let result = param(input).and_then(|param| {
            if let Param::Context = param {
                if context.is_some() {
                    return Err(syn::Error::new(
                        input.span(),
                        "a tool takes at most one `ToolContext` parameter",
                    ));
                }
                context = Some(input.span());
            }
            Ok(param)
        });
        match result {
            Ok(param) => params.push(param),
            Err(err) => match &mut errors {
                Some(all) => all.combine(err),
                None => errors = Some(err),
            },
        }
    }
    match errors {
        Some(errors) => Err(errors),
        None => Ok(params),
    }
}

fn param(input: &FnArg) -> syn::Result<Param> {
    let typed = match input {
        FnArg::Typed(typed) => typed,
        FnArg::Receiver(receiver) => {
            return Err(syn::Error::new(
                receiver.span(),
                "`#[tool]` needs a free function, not a method taking `self`",
            ));
        }
    };
    let inject = inject_of(&typed.attrs)?;
    if is_tool_context(&typed.ty) {
        if inject.is_some() {
            return Err(syn::Error::new(
                typed.ty.span(),
                "a `ToolContext` parameter receives the call's context; it cannot be injected",
            ));
        }
        return Ok(Param::Context);
    }
    let ident = match &*typed.pat {
        Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => pat.ident.clone(),
        other => {
            return Err(syn::Error::new(
                other.span(),
                "`#[tool]` needs a plain name for each parameter (`a: i64`): \
                 the name is the argument's name in the schema",
            ));
        }
    };
    match &*typed.ty {
        Type::Reference(_) => {
            return Err(syn::Error::new(
                typed.ty.span(),
                "tool arguments are read from JSON and must be owned: use `String` for `&str`, \
                 `Vec<T>` for `&[T]`",
            ));
        }
        Type::ImplTrait(_) => {
            return Err(syn::Error::new(
                typed.ty.span(),
                "`#[tool]` does not support generic functions (`impl Trait` parameters): \
                 the tool's argument schema is fixed at compile time",
            ));
        }
        _ => {}
    }
    Ok(Param::Arg {
        key: ident.unraw().to_string(),
        ident,
        ty: typed.ty.clone(),
        docs: typed
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("doc"))
            .cloned()
            .collect(),
        inject,
    })
}

/// Whether a parameter receives the call's `ToolContext` (decided by the last
/// path segment, so `ToolContext` and `stategraph_llm::ToolContext` both
/// count).
fn is_tool_context(ty: &Type) -> bool {
    matches!(ty, Type::Path(path)
    if path.qself.is_none()
        && path.path.segments.last().is_some_and(|last| {
            last.ident == "ToolContext" && last.arguments.is_none()
        }))
}

/// Reads the parameter's `#[inject(...)]`, if any.
fn inject_of(attrs: &[Attribute]) -> syn::Result<Option<Inject>> {
    let mut found: Option<Inject> = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("inject")) {
        if !matches!(attr.meta, Meta::List(_)) {
            return Err(syn::Error::new(
                attr.span(),
                format!("`#[inject(...)]` needs a source: {INJECT_SOURCES}"),
            ));
        }
        attr.parse_nested_meta(|meta| {
            if found.is_some() {
                return Err(meta.error("a parameter is injected from one source only"));
            }
            found = Some(if meta.path.is_ident("state") {
                if meta.input.peek(syn::Token![=]) {
                    Inject::StateKey(meta.value()?.parse()?)
                } else {
                    Inject::State
                }
            } else if meta.path.is_ident("tool_call_id") {
                Inject::ToolCallId
            } else if meta.path.is_ident("store") || meta.path.is_ident("runtime") {
                return Err(meta.error(
                    "the store and the runtime are not JSON: take a `ToolContext` parameter \
                     and read them with `ToolContext::get`",
                ));
            } else {
                return Err(meta.error(format!(
                    "unknown `inject` source; expected {INJECT_SOURCES}"
                )));
            });
            Ok(())
        })?;
    }
    Ok(found)
}

fn output(sig: &Signature) -> syn::Result<Output> {
    let ty = match &sig.output {
        ReturnType::Type(_, ty) => (**ty).clone(),
        ReturnType::Default => {
            return Err(syn::Error::new(
                sig.paren_token.span.close(),
                "a tool returns what the model sees: `-> Result<String, ToolError>` or any \
                 type converting into `ToolOutput`",
            ));
        }
    };
    let is_result = matches!(&ty, Type::Path(path)
        if path.qself.is_none()
            && path.path.segments.last().is_some_and(|last| last.ident == "Result"));
    Ok(if is_result {
        Output::Fallible(ty)
    } else {
        Output::Infallible(ty)
    })
}

/// The function's doc comment as one text: lines joined with `\n`, the
/// indentation they share removed, blank lines at both ends trimmed. `None`
/// when the function has no doc comment.
fn doc_text(attrs: &[Attribute]) -> syn::Result<Option<String>> {
    let mut lines = Vec::new();
    for attr in attrs {
        let Meta::NameValue(meta) = &attr.meta else {
            continue;
        };
        if !meta.path.is_ident("doc") {
            continue;
        }
        let Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) = &meta.value
        else {
            return Err(syn::Error::new(
                meta.value.span(),
                "`#[tool]` reads the description from literal doc comments; \
                 use `#[tool(description = \"...\")]` instead",
            ));
        };
        // `split`, not `lines`: an empty `///` line is one blank line.
        lines.extend(lit.value().split('\n').map(str::to_owned));
    }
    if lines.is_empty() {
        return Ok(None);
    }
    Ok(Some(dedent(&lines)))
}

fn dedent(lines: &[String]) -> String {
    let indent = lines
        .iter()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()
        .unwrap_or(0);
    let text: Vec<&str> = lines
        .iter()
        .map(|line| line.get(indent..).unwrap_or("").trim_end())
        .collect();
    text.join("\n").trim().to_owned()
}

/// Removes the parameter attributes only `#[tool]` reads (doc comments and
/// `#[inject(...)]`), which Rust does not accept on parameters.
fn strip_param_attrs(sig: &mut Signature) {
    for input in &mut sig.inputs {
        let attrs = match input {
            FnArg::Typed(typed) => &mut typed.attrs,
            FnArg::Receiver(receiver) => &mut receiver.attrs,
        };
        attrs.retain(|a| !a.path().is_ident("doc") && !a.path().is_ident("inject"));
    }
}

/// `add_numbers` -> `AddNumbers`.
fn upper_camel(name: &str) -> String {
    name.split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().collect::<String>() + chars.as_str()
            })
        })
        .collect()
}

fn generate(spec: &ToolSpec, func: &Ident) -> TokenStream {
    let krate = &spec.krate;
    // The JSON crate of the `Tool` trait's signatures, through the llm
    // crate, so the caller needs no dependency of its own.
    let json = quote!(#krate::__private::serde_json);
    let name = &spec.name;
    let description = &spec.description;
    let vis = &spec.vis;
    let tool = format_ident!(
        "{}Tool",
        upper_camel(&func.unraw().to_string()),
        span = func.span()
    );
    let tool_doc = format!(
        "The `{name}` tool, made by `#[tool]` from `{}`:\n\n{description}",
        func.unraw()
    );

    let args = args_struct(spec, &json);
    let has_args = spec.params.iter().any(|p| matches!(p, Param::Arg { .. }));
    let read_arg = has_args.then(|| read_arg_fn(krate, &json));
    let injected = injected_args_fn(spec);
    let return_direct = spec.return_direct.then(|| {
        quote!(
            fn return_direct(&self) -> bool {
                true
            }
        )
    });
    let call_args = spec.params.iter().map(|param| match param {
        Param::Arg { key, ty, .. } => quote_spanned!(ty.span()=>
            __read_arg(&mut __tool_args, #key, #json::from_value::<#ty>)?
        ),
        Param::Context => quote!(__tool_ctx),
    });
    let args_object = if has_args {
        quote! {
            let #json::Value::Object(mut __tool_args) = __tool_args else {
                return ::core::result::Result::Err(#krate::ToolError::invalid_args(
                    "arguments must be a JSON object",
                ));
            };
        }
    } else {
        quote!(let _ = __tool_args;)
    };
    let convert_fns = convert_fns(krate);
    let convert = convert(krate, &spec.output);

    quote! {
        #[doc = #tool_doc]
        #[derive(
            ::core::clone::Clone,
            ::core::marker::Copy,
            ::core::fmt::Debug,
            ::core::default::Default,
        )]
        #vis struct #tool;

        const _: () = {
            #args
            #read_arg
            #convert_fns

            impl #krate::Tool for #tool {
                fn name(&self) -> &str {
                    #name
                }

                fn description(&self) -> &str {
                    #description
                }

                fn args_schema(&self) -> #json::Value {
                    #krate::tool_schema::<__ToolArgs>()
                }

                #injected
                #return_direct

                async fn call(
                    &self,
                    __tool_args: #json::Value,
                    __tool_ctx: #krate::ToolContext,
                ) -> ::core::result::Result<#krate::ToolOutput, #krate::ToolError> {
                    let __tool_args =
                        __tool_ctx.inject(__tool_args, #krate::Tool::injected_args(self))?;
                    #args_object
                    let __tool_result = #func(#(#call_args),*).await;
                    #convert
                }
            }
        };
    }
}

/// The struct the argument schema is derived from (never built: the
/// arguments are read one by one, so an error names the argument).
/// Injected arguments are described as any JSON: they are hidden from the
/// model, and their types need only deserialize.
fn args_struct(spec: &ToolSpec, json: &TokenStream) -> TokenStream {
    let krate = &spec.krate;
    let krate_path = format!("{}::schemars", quote!(#krate)).replace(' ', "");
    let any_json = format!("{}::Value", json).replace(' ', "");
    let name = &spec.name;
    let fields = spec.params.iter().filter_map(|param| match param {
        Param::Arg {
            ident,
            ty,
            docs,
            inject,
            ..
        } => {
            let with = inject
                .is_some()
                .then(|| quote!(#[schemars(with = #any_json)]));
            Some(quote!(#(#docs)* #with #ident: #ty,))
        }
        Param::Context => None,
    });
    quote! {
        #[derive(#krate::schemars::JsonSchema)]
        #[schemars(crate = #krate_path, title = #name)]
        #[allow(dead_code)]
        struct __ToolArgs {
            #(#fields)*
        }
    }
}

/// Reads one argument: a missing one reads as `null` (so `Option`
/// arguments are optional) and is reported as missing if `null` does not
/// fit.
fn read_arg_fn(krate: &Path, json: &TokenStream) -> TokenStream {
    quote! {
        fn __read_arg<T>(
            args: &mut #json::Map<::std::string::String, #json::Value>,
            key: &str,
            decode: fn(#json::Value) -> ::core::result::Result<T, #json::Error>,
        ) -> ::core::result::Result<T, #krate::ToolError> {
            match args.remove(key) {
                ::core::option::Option::Some(value) => decode(value).map_err(|err| {
                    #krate::ToolError::invalid_args(::std::format!("`{key}`: {err}"))
                }),
                ::core::option::Option::None => decode(#json::Value::Null).map_err(|_| {
                    #krate::ToolError::invalid_args(::std::format!("missing field `{key}`"))
                }),
            }
        }
    }
}

fn injected_args_fn(spec: &ToolSpec) -> Option<TokenStream> {
    let krate = &spec.krate;
    let injected: Vec<TokenStream> = spec
        .params
        .iter()
        .filter_map(|param| match param {
            Param::Arg {
                key,
                inject: Some(inject),
                ..
            } => {
                let source = match inject {
                    Inject::State => quote!(#krate::Injected::State),
                    Inject::StateKey(state_key) => quote!(
                        #krate::Injected::StateKey(::std::string::String::from(#state_key))
                    ),
                    Inject::ToolCallId => quote!(#krate::Injected::ToolCallId),
                };
                Some(quote!(#krate::InjectedArg::new(#key, #source)))
            }
            _ => None,
        })
        .collect();
    if injected.is_empty() {
        return None;
    }
    Some(quote! {
        fn injected_args(&self) -> &[#krate::InjectedArg] {
            static INJECTED: ::std::sync::OnceLock<::std::vec::Vec<#krate::InjectedArg>> =
                ::std::sync::OnceLock::new();
            INJECTED.get_or_init(|| ::std::vec![#(#injected),*])
        }
    })
}

/// Converts the error the function returns: `Into<ToolError>`, a generic
/// function so the bound, not a missing method, is what an unfit type
/// reports.
fn convert_fns(krate: &Path) -> TokenStream {
    quote! {
        #[allow(dead_code)]
        fn __tool_error<E: ::core::convert::Into<#krate::ToolError>>(
            error: E,
        ) -> #krate::ToolError {
            error.into()
        }
    }
}

/// Turns `__tool_result` into the call's result, spanned at the return type
/// so a type that does not convert is reported there. A value that is
/// `Into<ToolOutput>` converts, any other `Serialize` value becomes its JSON:
/// method resolution on the concrete type chooses (`ViaInto` is implemented
/// for `&OutputOf<T>`, one reference closer to the `&&` receiver than
/// `ViaSerialize`).
fn convert(krate: &Path, output: &Output) -> TokenStream {
    let to_output = quote! {
        {
            use #krate::__private::{ViaInto as _, ViaSerialize as _};
            (&&#krate::__private::OutputOf::new(__tool_value)).to_tool_output()
        }
    };
    match output {
        Output::Fallible(ty) => quote_spanned! {ty.span()=>
            match __tool_result {
                ::core::result::Result::Ok(__tool_value) => #to_output,
                ::core::result::Result::Err(__tool_error_value) => {
                    ::core::result::Result::Err(__tool_error(__tool_error_value))
                }
            }
        },
        Output::Infallible(ty) => quote_spanned! {ty.span()=>
            {
                let __tool_value = __tool_result;
                #to_output
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use syn::parse_quote;

    use super::*;

    fn error_of(attr: TokenStream, item: ItemFn) -> String {
        match spec(attr, &item) {
            Ok(_) => panic!("expected an error for {}", quote!(#item)),
            Err(err) => err.to_string(),
        }
    }

    fn spec_of(attr: TokenStream, item: ItemFn) -> ToolSpec {
        match spec(attr, &item) {
            Ok(spec) => spec,
            Err(err) => panic!("unexpected error: {err}"),
        }
    }

    #[test]
    fn sync_unsafe_generic_and_method_fns_are_rejected() {
        let err = error_of(
            quote!(),
            parse_quote!(
                fn add(a: i64) -> String {
                    a.to_string()
                }
            ),
        );
        assert!(err.contains("needs an `async fn`"), "{err}");
        let err = error_of(
            quote!(),
            parse_quote!(
                async unsafe fn add() -> String {}
            ),
        );
        assert!(err.contains("`unsafe fn`"), "{err}");
        let err = error_of(
            quote!(),
            parse_quote!(
                async fn add<T>(a: T) -> String {}
            ),
        );
        assert!(err.contains("does not support generic"), "{err}");
        let err = error_of(
            quote!(),
            parse_quote!(
                async fn add(a: i64) -> String
                where
                    i64: Copy,
                {
                }
            ),
        );
        assert!(err.contains("does not support generic"), "{err}");
        let err = error_of(
            quote!(),
            parse_quote!(
                async fn add(a: impl Into<i64>) -> String {}
            ),
        );
        assert!(err.contains("`impl Trait` parameters"), "{err}");
        let err = error_of(
            quote!(),
            parse_quote!(
                async fn add(&self) -> String {}
            ),
        );
        assert!(err.contains("not a method taking `self`"), "{err}");
    }

    #[test]
    fn unknown_and_duplicate_options_are_rejected() {
        let f: ItemFn = parse_quote!(
            /// Adds.
            async fn add() -> String {}
        );
        let err = error_of(quote!(nme = "x"), f.clone());
        assert!(err.contains("unknown `tool` option"), "{err}");
        assert!(err.contains("return_direct"), "{err}");
        let err = error_of(quote!(return_direct, return_direct), f.clone());
        assert!(err.contains("duplicate `tool` option"), "{err}");
        let err = error_of(quote!(name = ""), f.clone());
        assert!(err.contains("name cannot be empty"), "{err}");
        let err = error_of(quote!(crate = "not a path"), f);
        assert!(err.contains("expected"), "{err}");
    }

    #[test]
    fn bad_parameters_are_rejected() {
        let err = error_of(
            quote!(),
            parse_quote!(
                /// Adds.
                async fn add((a, b): (i64, i64)) -> String {}
            ),
        );
        assert!(err.contains("needs a plain name"), "{err}");
        let err = error_of(
            quote!(),
            parse_quote!(
                /// Adds.
                async fn add(ref a: i64) -> String {}
            ),
        );
        assert!(err.contains("needs a plain name"), "{err}");
        let err = error_of(
            quote!(),
            parse_quote!(
                /// Greets.
                async fn greet(name: &str) -> String {}
            ),
        );
        assert!(err.contains("must be owned"), "{err}");
        let err = error_of(
            quote!(),
            parse_quote!(
                /// Reads.
                async fn read(a: ToolContext, b: ToolContext) -> String {}
            ),
        );
        assert!(err.contains("at most one `ToolContext`"), "{err}");
    }

    #[test]
    fn bad_inject_attributes_are_rejected() {
        let cases = [
            (
                quote!(#[inject(memory)] m: String),
                "unknown `inject` source",
            ),
            (quote!(#[inject(store)] m: String), "not JSON"),
            (quote!(#[inject] m: String), "needs a source"),
            (
                quote!(#[inject(state, tool_call_id)] m: String),
                "one source only",
            ),
            (
                quote!(#[inject(state = 1)] m: String),
                "expected string literal",
            ),
            (
                quote!(#[inject(state)] ctx: ToolContext),
                "cannot be injected",
            ),
        ];
        for (param, expected) in cases {
            let err = error_of(
                quote!(),
                parse_quote!(
                    /// Reads.
                    async fn read(#param) -> String {}
                ),
            );
            assert!(err.contains(expected), "{param}: {err}");
        }
    }

    #[test]
    fn a_description_is_required() {
        let err = error_of(
            quote!(),
            parse_quote!(
                async fn add() -> String {}
            ),
        );
        assert!(err.contains("needs a description"), "{err}");
        let err = error_of(
            quote!(description = " "),
            parse_quote!(
                async fn add() -> String {}
            ),
        );
        assert!(err.contains("description cannot be empty"), "{err}");
        let err = error_of(
            quote!(),
            parse_quote!(
                #[doc = include_str!("x.md")]
                async fn add() -> String {}
            ),
        );
        assert!(err.contains("literal doc comments"), "{err}");
        let err = error_of(
            quote!(),
            parse_quote!(
                /// Adds.
                async fn add() {}
            ),
        );
        assert!(err.contains("a tool returns what the model sees"), "{err}");
    }

    #[test]
    fn docs_become_the_description_without_their_shared_indentation() {
        let spec = spec_of(
            quote!(),
            parse_quote!(
                /// Adds two numbers.
                ///
                /// Example:
                ///     add(1, 2) == 3
                #[doc(hidden)]
                async fn add() -> String {}
            ),
        );
        assert_eq!(
            spec.description,
            "Adds two numbers.\n\nExample:\n    add(1, 2) == 3"
        );
        assert_eq!(spec.name, "add");
        let spec = spec_of(
            quote!(name = "plus", description = " Sums. ", return_direct),
            parse_quote!(
                /// Ignored.
                async fn r#add() -> String {}
            ),
        );
        assert_eq!(
            (spec.name.as_str(), spec.description.as_str()),
            ("plus", "Sums.")
        );
        assert!(spec.return_direct);
    }

    #[test]
    fn parameters_are_classified() {
        let spec = spec_of(
            quote!(crate = "my::llm"),
            parse_quote!(
                /// Reads.
                async fn read(
                    /// The query.
                    mut r#type: Option<String>,
                    #[inject(state = "user")] user: String,
                    #[inject(state)] all: Json,
                    #[inject(tool_call_id)] id: String,
                    _: stategraph_llm::ToolContext,
                ) -> Result<String, ToolError> {
                }
            ),
        );
        let krate = &spec.krate;
        assert_eq!(quote!(#krate).to_string(), quote!(my::llm).to_string());
        assert!(matches!(spec.output, Output::Fallible(_)));
        let shapes: Vec<(String, usize, String)> = spec
            .params
            .into_iter()
            .map(|param| match param {
                Param::Arg {
                    key, docs, inject, ..
                } => {
                    let inject = match inject {
                        None => "-".to_owned(),
                        Some(Inject::State) => "state".to_owned(),
                        Some(Inject::StateKey(key)) => format!("state = {}", key.value()),
                        Some(Inject::ToolCallId) => "tool_call_id".to_owned(),
                    };
                    (key, docs.len(), inject)
                }
                Param::Context => ("<ctx>".to_owned(), 0, "-".to_owned()),
            })
            .collect();
        let expected = [
            ("type", 1, "-"),
            ("user", 0, "state = user"),
            ("all", 0, "state"),
            ("id", 0, "tool_call_id"),
            ("<ctx>", 0, "-"),
        ]
        .map(|(key, docs, inject)| (key.to_owned(), docs, inject.to_owned()));
        assert_eq!(shapes, expected);
    }

    #[test]
    fn errors_keep_the_function_without_macro_only_attributes() {
        let out = expand(
            quote!(bogus),
            quote!(
                /// Adds.
                async fn add(
                    /// The first.
                    #[inject(state)]
                    a: i64,
                ) -> String {
                    a.to_string()
                }
            ),
        )
        .to_string();
        assert!(out.contains("compile_error"), "{out}");
        assert!(out.contains("async fn add (a : i64 ,)"), "{out}");
        assert!(!out.contains("The first"), "{out}");
    }

    #[test]
    fn struct_names_are_upper_camel_case() {
        assert_eq!(upper_camel("add"), "Add");
        assert_eq!(upper_camel("get_weather_now"), "GetWeatherNow");
        assert_eq!(upper_camel("_private__x2"), "PrivateX2");
    }
}
