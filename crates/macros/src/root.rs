//! Where the generated code finds the stategraph crate it uses: the layer
//! crate when the using crate depends on it, else the facade's module for
//! it, found in the using crate's `Cargo.toml` (renamed dependencies
//! included), so `#[derive(State)]` and `#[tool]` work with only the facade
//! as a dependency.

use proc_macro_crate::{FoundCrate, crate_name};
use proc_macro2::Span;
use syn::{Ident, Path};

/// The facade crate's package name.
const FACADE: &str = "stategraph";

/// A layer crate the macros generate code for.
#[derive(Clone, Copy)]
pub(crate) struct Layer {
    /// Its package name, e.g. `stategraph-graph`.
    pub(crate) package: &'static str,
    /// The facade's module re-exporting it, e.g. `graph`.
    pub(crate) module: &'static str,
}

/// `stategraph-graph` (`stategraph::graph`), for `#[derive(State)]`.
pub(crate) const GRAPH: Layer = Layer {
    package: "stategraph-graph",
    module: "graph",
};

/// `stategraph-llm` (`stategraph::llm`), for `#[tool]`.
pub(crate) const LLM: Layer = Layer {
    package: "stategraph-llm",
    module: "llm",
};

impl Layer {
    /// The path of the layer in the generated code: `::stategraph_graph`
    /// (or its renamed name) when the using crate depends on the layer,
    /// `::stategraph::graph` when it depends on the facade, and the layer's
    /// own name when neither is found (no `Cargo.toml` to read).
    pub(crate) fn path(self) -> Path {
        let own = self.package.replace('-', "_");
        match crate_name(self.package) {
            // The layer's own tests and doctests reach it by its name.
            Ok(FoundCrate::Itself) => absolute(&own, None),
            Ok(FoundCrate::Name(name)) => absolute(&name, None),
            Err(_) => match crate_name(FACADE) {
                Ok(FoundCrate::Itself) => absolute(FACADE, Some(self.module)),
                Ok(FoundCrate::Name(name)) => absolute(&name, Some(self.module)),
                Err(_) => absolute(&own, None),
            },
        }
    }
}

/// `::name` or `::name::module`.
fn absolute(name: &str, module: Option<&str>) -> Path {
    let name = Ident::new(name, Span::call_site());
    match module {
        Some(module) => {
            let module = Ident::new(module, Span::call_site());
            syn::parse_quote!(::#name::#module)
        }
        None => syn::parse_quote!(::#name),
    }
}
