//! Enables the PostgreSQL conformance tests (`cfg(stategraph_postgres_tests)`)
//! when `STATEGRAPH_TEST_POSTGRES_URL` is set at build time. The conformance
//! macro generates one test per case, each of which needs a server; without
//! one, `tests/conformance.rs` compiles a single test that says so instead
//! (and fails under CI).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(stategraph_postgres_tests)");
    println!("cargo::rerun-if-env-changed=STATEGRAPH_TEST_POSTGRES_URL");
    println!("cargo::rerun-if-changed=build.rs");
    if std::env::var_os("STATEGRAPH_TEST_POSTGRES_URL").is_some_and(|url| !url.is_empty()) {
        println!("cargo::rustc-cfg=stategraph_postgres_tests");
    }
}
