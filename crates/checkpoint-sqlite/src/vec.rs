//! sqlite-vec, the vector extension, registered on every connection this
//! crate opens (feature `sqlite-vec`).
//!
//! The extension is compiled into the binary (the `sqlite-vec` crate builds
//! its C source with `SQLITE_CORE`, so it calls the SQLite this build links
//! through `libsqlite3-sys`), so there is no file to load:
//! `Connection::load_extension` does not apply. Registration is per
//! connection rather than through `sqlite3_auto_extension`, so connections
//! that other code in the process opens are left as they are, and a
//! registration that fails is an error of the connection that needed it.

use std::ffi::{CStr, c_char, c_int};

use rusqlite::{Connection, ffi};

/// The C signature of `sqlite3_vec_init`, an extension entry point. The
/// `sqlite-vec` crate declares the symbol without arguments.
type ExtensionInit = unsafe extern "C" fn(
    db: *mut ffi::sqlite3,
    error: *mut *mut c_char,
    api: *const ffi::sqlite3_api_routines,
) -> c_int;

/// Registers sqlite-vec's functions (`vec_distance_cosine`,
/// `vec_version`, ...) and virtual tables on `conn`.
///
/// # Errors
/// The SQLite error code sqlite-vec's entry point returned, with its
/// message, when a function or module could not be created.
#[allow(unsafe_code)]
pub(crate) fn register(conn: &Connection) -> rusqlite::Result<()> {
    let mut message: *mut c_char = std::ptr::null_mut();
    // SAFETY:
    // - `sqlite3_vec_init` is defined in sqlite-vec.c as
    //   `int sqlite3_vec_init(sqlite3 *, char **, const sqlite3_api_routines *)`;
    //   the crate declares it as `fn()`, so the pointer is cast back to the
    //   real C signature (`ExtensionInit`) before it is called. Function
    //   pointers have one size and representation.
    // - The C file is compiled with `SQLITE_CORE`, so it ignores `api` (null
    //   here) and calls the SQLite linked into this binary, the same one
    //   rusqlite uses (a build links one `sqlite3` only).
    // - `conn.handle()` is an open connection that outlives the call, and
    //   `&Connection` is not shared across threads (`Connection` is not
    //   `Sync`), so nothing else uses it meanwhile. The entry point only
    //   creates functions and modules on it; it neither closes it nor runs
    //   statements.
    // - On failure the entry point may set `message` to a string from
    //   `sqlite3_mprintf`, which is copied, then freed once with
    //   `sqlite3_free`.
    let (code, text) = unsafe {
        let init: ExtensionInit = std::mem::transmute::<*const (), ExtensionInit>(
            sqlite_vec::sqlite3_vec_init as *const (),
        );
        let code = init(conn.handle(), &raw mut message, std::ptr::null());
        let text = if message.is_null() {
            None
        } else {
            let text = CStr::from_ptr(message).to_string_lossy().into_owned();
            ffi::sqlite3_free(message.cast());
            Some(text)
        };
        (code, text)
    };
    if code == ffi::SQLITE_OK {
        return Ok(());
    }
    Err(rusqlite::Error::SqliteFailure(
        ffi::Error::new(code),
        Some(text.unwrap_or_else(|| "registering sqlite-vec failed".to_owned())),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_connections_compute_cosine_distances() {
        let conn = Connection::open_in_memory().unwrap();
        let missing = conn.query_row("SELECT vec_version()", [], |row| row.get::<_, String>(0));
        assert!(missing.is_err(), "plain connections have no sqlite-vec");
        register(&conn).unwrap();
        let version: String = conn
            .query_row("SELECT vec_version()", [], |row| row.get(0))
            .unwrap();
        assert!(version.starts_with('v'), "{version}");
        let distance: f64 = conn
            .query_row(
                "SELECT vec_distance_cosine(vec_f32('[1, 0]'), vec_f32('[0, 1]'))",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(distance, 1.0);
        // Registering twice replaces the functions; it is not an error.
        register(&conn).unwrap();
    }
}
