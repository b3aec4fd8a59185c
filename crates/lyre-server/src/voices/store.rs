//! The voice store: every operation is scoped to one tenant and reads or writes the database
//! directly (no cache, so every replica sees an upload or a delete at once). Each operation has a
//! deadline (`voices.database_timeout_ms`); past it, or with the database unreachable, it fails
//! with [`StoreError::Unavailable`] and the next operation tries again: the store recovers by
//! itself when the database returns.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlx::Row;
use tokio::sync::OnceCell;

use super::database::{on_pool, DatabaseUrl, Pool};
use super::import::{read_voice_files, voice_files, ImportReport, Imported};
use super::voice::{ModelStamp, StoredVoice, VoiceSummary};
use crate::errors::{ErrorCode, Failure};
use crate::tenants::Tenant;

/// PostgreSQL: what an insert holds, until it commits, for its tenant (`$1`), so that replicas'
/// inserts for one tenant take turns and never pass `voices.max_voices` together. The first key
/// marks the lock as the voice store's ("lyre"), the second is the tenant's.
pub const TENANT_INSERT_LOCK: &str = "SELECT pg_advisory_xact_lock(1819898469, hashtext($1))";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("a voice named `{0}` already exists; delete it first")]
    Exists(String),
    #[error("the voice store is full ({0} voices); delete some first")]
    Full(usize),
    #[error("the voice database is unavailable: {0}")]
    Unavailable(String),
    #[error("stored voice `{name}` is damaged: {message}")]
    Damaged { name: String, message: String },
}

impl From<&StoreError> for Failure {
    fn from(e: &StoreError) -> Self {
        match e {
            StoreError::Exists(_) => Failure::new(ErrorCode::VoiceExists, e.to_string()).with_field("name"),
            StoreError::Full(_) => Failure::new(ErrorCode::VoiceStoreFull, e.to_string()),
            StoreError::Unavailable(_) => Failure::new(
                ErrorCode::StoreUnavailable,
                "the voice database is unavailable; voice operations will work again when it returns",
            ),
            StoreError::Damaged { .. } => Failure::new(ErrorCode::VoiceStoreError, e.to_string()),
        }
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        Failure::from(&e)
    }
}

fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

#[derive(Debug)]
pub struct VoiceStore {
    pool: Pool,
    url: DatabaseUrl,
    max_voices: usize,
    timeout: Duration,
    /// Voice files imported when the store is first ready: `voices.dir` and its tenant.
    startup_import: Option<(PathBuf, Tenant)>,
    ready: OnceCell<()>,
}

impl VoiceStore {
    /// No I/O besides creating a SQLite file's directory: the pool connects on first use.
    pub fn open(
        url: DatabaseUrl,
        max_connections: u32,
        timeout: Duration,
        max_voices: usize,
    ) -> Result<Self, String> {
        let pool = Pool::connect_lazy(&url, max_connections, timeout)?;
        Ok(VoiceStore { pool, url, max_voices, timeout, startup_import: None, ready: OnceCell::new() })
    }

    /// The store a server's configuration describes. With one tenant, the voice files in
    /// `voices.dir` are imported into it before the first operation (once each: see `import`);
    /// with several, the operator chooses (`lyre voices import DIR --tenant NAME`).
    pub fn from_config(cfg: &crate::config::ServerConfig) -> Result<Self, String> {
        let v = &cfg.voices;
        let url = DatabaseUrl::parse(&v.database_url())?;
        let timeout = Duration::from_millis(v.database_timeout_ms);
        let mut store = VoiceStore::open(url, v.database_max_connections, timeout, v.max_voices)?;
        let dir = PathBuf::from(&v.dir);
        match cfg.auth.only_tenant()? {
            Some(tenant) => store.startup_import = Some((dir, tenant)),
            None => {
                let files = voice_files(&dir).map(|f| f.len()).unwrap_or(0);
                if files > 0 {
                    tracing::warn!(
                        dir = %dir.display(),
                        files,
                        "voice files not imported: several tenants are configured; run `lyre voices import DIR --tenant NAME`"
                    );
                }
            }
        }
        Ok(store)
    }

    /// The database, without its password.
    pub fn describe(&self) -> String {
        self.url.redacted()
    }

    /// Runs the migrations and the start-up import once (retried by the next operation while
    /// they fail).
    pub async fn ready(&self) -> Result<(), StoreError> {
        self.bounded(async { Ok(()) }).await
    }

    async fn prepare(&self) -> Result<(), StoreError> {
        self.ready
            .get_or_try_init(|| async {
                self.pool.migrate().await.map_err(unavailable)?;
                tracing::info!(database = %self.url.redacted(), backend = self.pool.backend(), "voice database ready");
                if let Some((dir, tenant)) = &self.startup_import {
                    let (files, unreadable) = read_voice_files(dir).map_err(unavailable)?;
                    let mut report = ImportReport { unreadable, ..Default::default() };
                    for (voice, sha) in files {
                        report.record(voice.name.clone(), self.import_row(tenant, &voice, &sha).await?);
                    }
                    report.log(dir, tenant);
                }
                Ok(())
            })
            .await
            .map(|_| ())
    }

    /// `op` after the migrations, within the deadline.
    async fn bounded<T>(
        &self,
        op: impl std::future::Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let run = async {
            self.prepare().await?;
            op.await
        };
        let result = match tokio::time::timeout(self.timeout, run).await {
            Ok(result) => result,
            Err(_) => {
                Err(StoreError::Unavailable(format!("no answer within {} ms", self.timeout.as_millis())))
            }
        };
        if let Err(e @ (StoreError::Unavailable(_) | StoreError::Damaged { .. })) = &result {
            // Clients get a bare 503; the reason is for the operator.
            tracing::warn!(database = %self.url.redacted(), error = %e, "voice operation failed");
        }
        result
    }

    /// Stores a new voice for `tenant` (its name already validated); never replaces one. Returns
    /// once the row is committed.
    pub async fn insert(&self, tenant: &Tenant, voice: &StoredVoice) -> Result<(), StoreError> {
        self.bounded(async {
            let added = self.insert_row(tenant, voice, Some(self.max_voices)).await?;
            if added {
                return Ok(());
            }
            if self.exists_row(tenant, &voice.name).await? {
                Err(StoreError::Exists(voice.name.clone()))
            } else {
                Err(StoreError::Full(self.max_voices))
            }
        })
        .await
    }

    /// One `INSERT`: nothing when the name is taken or (with `cap`) the tenant holds `cap` voices.
    /// SQLite takes its write lock before the statement reads, so the count and the insert are
    /// one step there; PostgreSQL's statements read a snapshot, so two replicas could both see
    /// room for one more: there the insert holds a per-tenant advisory lock until it commits.
    async fn insert_row(
        &self,
        tenant: &Tenant,
        v: &StoredVoice,
        cap: Option<usize>,
    ) -> Result<bool, StoreError> {
        const SQL: &str = "INSERT INTO voices (tenant, name, model_type, model_size, hidden_size, \
             has_transcript, reference_frames, seconds, created_unix_s, voice) \
             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 \
             WHERE (SELECT COUNT(*) FROM voices WHERE tenant = $1) < $11 \
             ON CONFLICT (tenant, name) DO NOTHING";
        let cap = cap.map_or(i64::MAX, |c| c as i64);
        let s = v.summary();
        macro_rules! insert {
            ($executor:expr) => {
                sqlx::query(SQL)
                    .bind(tenant.as_str())
                    .bind(&v.name)
                    .bind(&s.model.model_type)
                    .bind(&s.model.size)
                    .bind(s.model.hidden_size as i64)
                    .bind(s.has_transcript)
                    .bind(s.reference_frames as i64)
                    .bind(s.seconds as f64)
                    .bind(s.created_unix_s as i64)
                    .bind(v.to_json())
                    .bind(cap)
                    .execute($executor)
                    .await
                    .map_err(unavailable)?
                    .rows_affected()
            };
        }
        let rows = match &self.pool {
            Pool::Sqlite(p) => insert!(p),
            Pool::Postgres(p) => {
                let mut tx = p.begin().await.map_err(unavailable)?;
                sqlx::query(TENANT_INSERT_LOCK)
                    .bind(tenant.as_str())
                    .execute(&mut *tx)
                    .await
                    .map_err(unavailable)?;
                let rows = insert!(&mut *tx);
                tx.commit().await.map_err(unavailable)?;
                rows
            }
        };
        Ok(rows == 1)
    }

    async fn exists_row(&self, tenant: &Tenant, name: &str) -> Result<bool, StoreError> {
        const SQL: &str = "SELECT COUNT(*) FROM voices WHERE tenant = $1 AND name = $2";
        let n: i64 = on_pool!(&self.pool, p => sqlx::query_scalar(SQL)
            .bind(tenant.as_str())
            .bind(name)
            .fetch_one(p)
            .await
            .map_err(unavailable)?);
        Ok(n > 0)
    }

    /// Whether `tenant` has a voice of that name.
    pub async fn exists(&self, tenant: &Tenant, name: &str) -> Result<bool, StoreError> {
        self.bounded(self.exists_row(tenant, name)).await
    }

    /// `tenant`'s voice of that name.
    pub async fn get(&self, tenant: &Tenant, name: &str) -> Result<Option<StoredVoice>, StoreError> {
        const SQL: &str = "SELECT voice FROM voices WHERE tenant = $1 AND name = $2";
        self.bounded(async {
            let json: Option<String> = on_pool!(&self.pool, p => sqlx::query_scalar(SQL)
                .bind(tenant.as_str())
                .bind(name)
                .fetch_optional(p)
                .await
                .map_err(unavailable)?);
            json.map(|j| {
                StoredVoice::from_json(j.as_bytes(), name)
                    .map_err(|message| StoreError::Damaged { name: name.to_string(), message })
            })
            .transpose()
        })
        .await
    }

    /// `tenant`'s voices by name, or (for operators) every tenant's voices by tenant and name.
    pub async fn list(&self, tenant: Option<&Tenant>) -> Result<Vec<(Tenant, VoiceSummary)>, StoreError> {
        const ONE: &str = "SELECT tenant, name, model_type, model_size, hidden_size, has_transcript, \
             reference_frames, seconds, created_unix_s FROM voices WHERE tenant = $1 ORDER BY name";
        const ALL: &str = "SELECT tenant, name, model_type, model_size, hidden_size, has_transcript, \
             reference_frames, seconds, created_unix_s FROM voices ORDER BY tenant, name";
        self.bounded(async {
            let rows = on_pool!(&self.pool, p => {
                let query = match tenant {
                    Some(t) => sqlx::query(ONE).bind(t.as_str()),
                    None => sqlx::query(ALL),
                };
                query.fetch_all(p).await.map_err(unavailable)?.iter().map(summary_row).collect::<Result<Vec<_>, _>>()
            });
            rows.map_err(unavailable)
        })
        .await
    }

    /// Deletes `tenant`'s voice; `false` if it has none of that name.
    pub async fn remove(&self, tenant: &Tenant, name: &str) -> Result<bool, StoreError> {
        const SQL: &str = "DELETE FROM voices WHERE tenant = $1 AND name = $2";
        self.bounded(async {
            let rows = on_pool!(&self.pool, p => sqlx::query(SQL)
                .bind(tenant.as_str())
                .bind(name)
                .execute(p)
                .await
                .map_err(unavailable)?
                .rows_affected());
            Ok(rows > 0)
        })
        .await
    }

    /// Imports every voice file of `dir` into `tenant`'s voices, each file once: a file imported
    /// before is skipped even if its voice was deleted since. Not bounded by `voices.max_voices`
    /// (an operator's import keeps everything). Unreadable files are reported, not fatal.
    pub async fn import_dir(&self, dir: &Path, tenant: &Tenant) -> Result<ImportReport, StoreError> {
        let (files, unreadable) = read_voice_files(dir)
            .map_err(|e| StoreError::Unavailable(format!("reading {}: {e}", dir.display())))?;
        let mut report = ImportReport { unreadable, ..Default::default() };
        for (voice, sha) in files {
            report.record(voice.name.clone(), self.bounded(self.import_row(tenant, &voice, &sha)).await?);
        }
        Ok(report)
    }

    async fn import_row(
        &self,
        tenant: &Tenant,
        voice: &StoredVoice,
        sha256: &str,
    ) -> Result<Imported, StoreError> {
        const SEEN: &str =
            "SELECT COUNT(*) FROM voice_imports WHERE tenant = $1 AND name = $2 AND sha256 = $3";
        const MARK: &str = "INSERT INTO voice_imports (tenant, name, sha256, imported_unix_s) \
             VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING";
        let seen: i64 = on_pool!(&self.pool, p => sqlx::query_scalar(SEEN)
            .bind(tenant.as_str())
            .bind(&voice.name)
            .bind(sha256)
            .fetch_one(p)
            .await
            .map_err(unavailable)?);
        if seen > 0 {
            return Ok(Imported::AlreadyImported);
        }
        let added = self.insert_row(tenant, voice, None).await?;
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        on_pool!(&self.pool, p => sqlx::query(MARK)
            .bind(tenant.as_str())
            .bind(&voice.name)
            .bind(sha256)
            .bind(now as i64)
            .execute(p)
            .await
            .map(|_| ())
            .map_err(unavailable)?);
        Ok(if added { Imported::Added } else { Imported::NameTaken })
    }

    /// Closes the pool's connections.
    pub async fn close(&self) {
        self.pool.close().await
    }
}

fn summary_row<R: Row>(row: &R) -> Result<(Tenant, VoiceSummary), sqlx::Error>
where
    usize: sqlx::ColumnIndex<R>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> f64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> bool: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let tenant: String = row.try_get(0)?;
    let tenant = Tenant::new(&tenant).map_err(|e| sqlx::Error::Decode(e.into()))?;
    let summary = VoiceSummary {
        name: row.try_get(1)?,
        model: ModelStamp {
            model_type: row.try_get(2)?,
            size: row.try_get(3)?,
            hidden_size: row.try_get::<i64, _>(4)? as usize,
        },
        has_transcript: row.try_get(5)?,
        reference_frames: row.try_get::<i64, _>(6)? as usize,
        seconds: row.try_get::<f64, _>(7)? as f32,
        created_unix_s: row.try_get::<i64, _>(8)? as u64,
    };
    Ok((tenant, summary))
}
