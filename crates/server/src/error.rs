//! The crate's error.

use stategraph::core::ErrorKind;

/// What can go wrong building or starting a server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A settings file that cannot be read or parsed.
    #[error("settings file {path}: {message}")]
    SettingsFile {
        /// The file.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// An environment variable whose value does not parse.
    #[error("environment variable {name}={value:?}: {message}")]
    SettingsEnv {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What was expected.
        message: String,
    },
    /// A setting whose value cannot be used.
    #[error("setting {name}: {message}")]
    InvalidSetting {
        /// The setting (`http.cors_allow_origins`, ...).
        name: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// The database `database.url` names cannot be opened or migrated.
    #[error("database {url}: {message}")]
    Database {
        /// The URL.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// A setting names something this server does not serve (a database
    /// URL of another kind).
    #[error("not supported yet: {0}")]
    Unsupported(String),
    /// Two graphs registered under one id.
    #[error("graph id {0:?} is registered twice")]
    DuplicateGraph(String),
    /// Binding or serving the listening socket failed.
    #[error("cannot listen on {address}: {source}")]
    Listen {
        /// The address.
        address: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// The kind of failure (shared across stategraph's crates).
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::SettingsFile { .. }
            | Self::SettingsEnv { .. }
            | Self::InvalidSetting { .. }
            | Self::DuplicateGraph(_) => ErrorKind::InvalidInput,
            Self::Listen { .. } | Self::Database { .. } => ErrorKind::Backend,
            Self::Unsupported(_) => ErrorKind::Unsupported,
        }
    }
}
