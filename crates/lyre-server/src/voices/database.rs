//! The voice database: an embedded SQLite file (one server, no set-up) or PostgreSQL (several
//! replicas), chosen by URL. Queries are plain SQL that both understand, run through sqlx at
//! run time; the schema's migrations are embedded from `migrations/voices/`.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

static MIGRATOR: Migrator = sqlx::migrate!("migrations/voices");

/// `voices.database`, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    /// `sqlite://PATH` (relative to the working directory; `sqlite:///abs/path` is absolute).
    Sqlite(PathBuf),
    /// `postgres://USER:PASSWORD@HOST:PORT/DB?sslmode=...`, kept whole for the driver.
    Postgres(String),
}

impl DatabaseUrl {
    pub fn parse(url: &str) -> Result<Self, String> {
        let url = url.trim();
        if let Some(path) = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")) {
            if path.is_empty() || path.contains('?') || path.starts_with(':') {
                return Err(format!(
                    "`{url}`: give a file, e.g. sqlite://voices/voices.db (no options, no in-memory database)"
                ));
            }
            return Ok(DatabaseUrl::Sqlite(PathBuf::from(path)));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            PgConnectOptions::from_str(url)
                .map_err(|e| format!("{}: {e}", DatabaseUrl::Postgres(url.into()).redacted()))?;
            return Ok(DatabaseUrl::Postgres(url.to_string()));
        }
        Err(format!(
            "`{}` is not a database URL; use sqlite://PATH or postgres://USER:PASSWORD@HOST/DATABASE",
            redact(url)
        ))
    }

    /// The URL without its password, for logs and errors.
    pub fn redacted(&self) -> String {
        match self {
            DatabaseUrl::Sqlite(p) => format!("sqlite://{}", p.display()),
            DatabaseUrl::Postgres(url) => redact(url),
        }
    }
}

/// `scheme://user:secret@host` → `scheme://user:***@host`.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else { return url.to_string() };
    match rest[..at].split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***{}", &rest[at..]),
        None => url.to_string(),
    }
}

/// A pool of connections to one of the two backends.
#[derive(Debug, Clone)]
pub enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Runs the same code on whichever pool it is: `$p` is a `&SqlitePool` or a `&PgPool`.
macro_rules! on_pool {
    ($pool:expr, $p:ident => $body:expr) => {
        match $pool {
            $crate::voices::database::Pool::Sqlite($p) => $body,
            $crate::voices::database::Pool::Postgres($p) => $body,
        }
    };
}
pub(crate) use on_pool;

impl Pool {
    /// A pool that connects when first used (so a server starts while its database is down).
    /// Creates the SQLite file's directory.
    pub fn connect_lazy(url: &DatabaseUrl, max_connections: u32, timeout: Duration) -> Result<Self, String> {
        Ok(match url {
            DatabaseUrl::Sqlite(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
                }
                // WAL with synchronous=FULL: a commit is on disk before the upload is answered.
                let opts = SqliteConnectOptions::new()
                    .filename(path)
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Full)
                    .busy_timeout(timeout);
                let pool = SqlitePoolOptions::new()
                    .max_connections(max_connections)
                    .acquire_timeout(timeout)
                    .connect_lazy_with(opts);
                Pool::Sqlite(pool)
            }
            DatabaseUrl::Postgres(url) => {
                let opts = PgConnectOptions::from_str(url)
                    .map_err(|e| format!("{}: {e}", redact(url)))?
                    .application_name("lyre");
                let pool = PgPoolOptions::new()
                    .max_connections(max_connections)
                    .acquire_timeout(timeout)
                    .connect_lazy_with(opts);
                Pool::Postgres(pool)
            }
        })
    }

    /// Brings the schema up to date (safe from several replicas at once: PostgreSQL takes an
    /// advisory lock, SQLite a write lock).
    pub async fn migrate(&self) -> Result<(), sqlx::migrate::MigrateError> {
        on_pool!(self, p => MIGRATOR.run(p).await)
    }

    pub fn backend(&self) -> &'static str {
        match self {
            Pool::Sqlite(_) => "sqlite",
            Pool::Postgres(_) => "postgres",
        }
    }

    pub async fn close(&self) {
        on_pool!(self, p => p.close().await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_passwords_never_show() {
        assert_eq!(
            DatabaseUrl::parse("sqlite://voices/voices.db"),
            Ok(DatabaseUrl::Sqlite("voices/voices.db".into()))
        );
        assert_eq!(
            DatabaseUrl::parse("sqlite:///var/lib/v.db"),
            Ok(DatabaseUrl::Sqlite("/var/lib/v.db".into()))
        );
        let pg = DatabaseUrl::parse("postgres://lyre:s3cret@db.internal:5432/lyre?sslmode=require").unwrap();
        assert_eq!(pg.redacted(), "postgres://lyre:***@db.internal:5432/lyre?sslmode=require");
        assert!(DatabaseUrl::parse("postgresql://lyre@127.0.0.1/lyre").is_ok());
        for bad in ["", "voices.db", "mysql://x@y/z", "sqlite://", "sqlite::memory:", "sqlite://a.db?mode=ro"]
        {
            assert!(DatabaseUrl::parse(bad).is_err(), "{bad}");
        }
        let e = DatabaseUrl::parse("mysql://root:hunter22@db/x").unwrap_err();
        assert!(!e.contains("hunter22") && e.contains("root:***@db"), "{e}");
        let e = DatabaseUrl::parse("postgres://lyre:hunter22@db:notaport/x").unwrap_err();
        assert!(!e.contains("hunter22"), "{e}");
    }
}
