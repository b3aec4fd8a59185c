//! Voice files (`NAME.json`, one voice each, as older servers kept them in `voices.dir`): read
//! one by name, or import a whole directory into a tenant's voices. The files are left as they
//! are; each is imported once (by content), so nothing is lost and a voice deleted later does not
//! come back.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::name::validate_name;
use super::voice::StoredVoice;
use crate::tenants::Tenant;

/// Whether an import added the voice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Imported {
    Added,
    /// This file was imported before (the voice may have been deleted since).
    AlreadyImported,
    /// The tenant has another voice of that name; the database's is kept.
    NameTaken,
}

/// One voice file, checked.
pub fn read_voice_file(path: &Path) -> Result<(StoredVoice, Vec<u8>), String> {
    let stem = path.file_stem().and_then(|s| s.to_str()).ok_or("has no usable file name")?;
    validate_name(stem, "name").map_err(|f| f.message)?;
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let voice = StoredVoice::from_json(&bytes, stem)?;
    Ok((voice, bytes))
}

/// The `*.json` files of `dir` with a voice name as their stem (none if `dir` does not exist).
pub fn voice_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("json") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// The readable voice files of `dir`, each with the SHA-256 of its bytes, and the unreadable ones
/// with the reason.
pub(super) type VoiceFiles = (Vec<(StoredVoice, String)>, Vec<(PathBuf, String)>);

pub(super) fn read_voice_files(dir: &Path) -> std::io::Result<VoiceFiles> {
    let mut good = Vec::new();
    let mut bad = Vec::new();
    for path in voice_files(dir)? {
        match read_voice_file(&path) {
            Ok((voice, bytes)) => {
                let sha: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
                good.push((voice, sha));
            }
            Err(e) => bad.push((path, e)),
        }
    }
    Ok((good, bad))
}

/// What an import did, file by file.
#[derive(Debug, Default)]
pub struct ImportReport {
    pub added: Vec<String>,
    pub already_imported: Vec<String>,
    /// The tenant already had another voice of that name (kept; the file was not imported).
    pub name_taken: Vec<String>,
    pub unreadable: Vec<(PathBuf, String)>,
}

impl ImportReport {
    pub(super) fn record(&mut self, name: String, outcome: Imported) {
        match outcome {
            Imported::Added => self.added.push(name),
            Imported::AlreadyImported => self.already_imported.push(name),
            Imported::NameTaken => self.name_taken.push(name),
        }
    }

    pub(super) fn log(&self, dir: &Path, tenant: &Tenant) {
        for (path, why) in &self.unreadable {
            tracing::warn!(file = %path.display(), error = %why, "skipping a voice file");
        }
        for name in &self.name_taken {
            tracing::warn!(voice = %name, %tenant, "voice file not imported: the tenant already has a voice of that name");
        }
        if !self.added.is_empty() {
            tracing::info!(dir = %dir.display(), %tenant, voices = self.added.len(), "voice files imported");
        }
    }
}
