-- Cloned voices, one row per (tenant, voice name). The same SQL runs on SQLite and PostgreSQL.
-- `voice` is the voice as JSON (x-vector, transcript, reference codes: a few KB); the other
-- columns repeat what a listing shows, so a listing never reads the vectors.
CREATE TABLE voices (
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    model_type TEXT NOT NULL,
    model_size TEXT NOT NULL,
    hidden_size BIGINT NOT NULL,
    has_transcript BOOLEAN NOT NULL,
    reference_frames BIGINT NOT NULL,
    seconds DOUBLE PRECISION NOT NULL,
    created_unix_s BIGINT NOT NULL,
    voice TEXT NOT NULL,
    PRIMARY KEY (tenant, name)
);

-- Voice files (`voices.dir/*.json`) already imported, by content: a file is imported once, so
-- a voice deleted later does not come back at the next start.
CREATE TABLE voice_imports (
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    imported_unix_s BIGINT NOT NULL,
    PRIMARY KEY (tenant, name, sha256)
);
