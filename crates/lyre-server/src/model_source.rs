//! Where the served checkpoint comes from: a local directory, a Hugging Face repo id
//! (downloaded to the Hugging Face cache when the network allows), or the built-in demo. The
//! server listens while this runs: [`LoadProgress`] is what `/readyz` reports meanwhile.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{bail, Context};
use lyre_engine::checkpoint::ModelDir;
use serde::Serialize;

/// The files of a Qwen3-TTS 12 Hz repository that Lyre reads.
const REPO_FILES: &[&str] = &[
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "vocab.json",
    "merges.txt",
    "tokenizer_config.json",
    "speech_tokenizer/config.json",
    "speech_tokenizer/preprocessor_config.json",
    "speech_tokenizer/model.safetensors",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSource {
    Dir(PathBuf),
    Repo(String),
    Demo,
}

impl ModelSource {
    /// `dir` wins over `repo`; neither means the demo model.
    pub fn choose(dir: &str, repo: &str) -> Self {
        if !dir.is_empty() {
            ModelSource::Dir(dir.into())
        } else if !repo.is_empty() {
            ModelSource::Repo(repo.into())
        } else {
            ModelSource::Demo
        }
    }

    pub fn is_demo(&self) -> bool {
        matches!(self, ModelSource::Demo)
    }

    /// Opens (downloading or generating first where needed) and validates the checkpoint,
    /// reporting each step to `progress`.
    pub fn open(&self, progress: &LoadProgress) -> anyhow::Result<ModelDir> {
        let dir = match self {
            ModelSource::Dir(d) => d.clone(),
            ModelSource::Repo(id) => download(id, progress)?,
            ModelSource::Demo => {
                let dir = crate::demo::default_dir();
                crate::demo::ensure(&dir)
                    .with_context(|| format!("writing the demo model to {}", dir.display()))?;
                dir
            }
        };
        progress.update(|p| {
            p.stage = LoadStage::Loading;
            p.file = None;
        });
        Ok(ModelDir::open(&dir)?)
    }
}

/// What the model source is doing, for `/readyz` while the server is not ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadStage {
    /// Fetching the checkpoint's files from the Hugging Face Hub.
    Downloading,
    /// Reading and checking the checkpoint.
    Loading,
}

/// Progress of a model load: a download file by file, then the checkpoint's checks.
#[derive(Debug, Clone, Serialize)]
pub struct LoadState {
    pub stage: LoadStage,
    /// The repo being downloaded, if any.
    pub repo: Option<String>,
    /// The file being fetched.
    pub file: Option<String>,
    pub files_done: usize,
    pub files_total: usize,
    /// Bytes of the current file fetched, of its size.
    pub file_bytes_done: u64,
    pub file_bytes_total: u64,
    /// Bytes fetched in all (files found in the cache count as nothing).
    pub bytes_done: u64,
}

/// Shared between the loading thread and the `/readyz` handler.
#[derive(Debug)]
pub struct LoadProgress(Mutex<LoadState>);

impl Default for LoadProgress {
    fn default() -> Self {
        LoadProgress(Mutex::new(LoadState {
            stage: LoadStage::Loading,
            repo: None,
            file: None,
            files_done: 0,
            files_total: 0,
            file_bytes_done: 0,
            file_bytes_total: 0,
            bytes_done: 0,
        }))
    }
}

impl LoadProgress {
    pub fn snapshot(&self) -> LoadState {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn update(&self, f: impl FnOnce(&mut LoadState)) {
        f(&mut self.0.lock().unwrap_or_else(|p| p.into_inner()));
    }
}

/// hf-hub's download callbacks, feeding [`LoadProgress`] and an `info` line every 10 %.
struct FileProgress<'a> {
    progress: &'a LoadProgress,
    last_logged: Instant,
    logged_tenth: u64,
}

impl hf_hub::api::Progress for FileProgress<'_> {
    fn init(&mut self, size: usize, filename: &str) {
        self.progress.update(|p| {
            p.file = Some(filename.to_string());
            p.file_bytes_total = size as u64;
            p.file_bytes_done = 0;
        });
        self.logged_tenth = 0;
    }

    fn update(&mut self, size: usize) {
        let (done, total, file) = {
            let mut p = self.progress.0.lock().unwrap_or_else(|p| p.into_inner());
            p.file_bytes_done += size as u64;
            p.bytes_done += size as u64;
            (p.file_bytes_done, p.file_bytes_total, p.file.clone().unwrap_or_default())
        };
        let tenth = (done * 10).checked_div(total).unwrap_or(0);
        if tenth > self.logged_tenth && self.last_logged.elapsed().as_secs_f64() > 1.0 {
            self.logged_tenth = tenth;
            self.last_logged = Instant::now();
            tracing::info!(file, done, total, "downloading");
        }
    }

    fn finish(&mut self) {}
}

fn download(repo: &str, progress: &LoadProgress) -> anyhow::Result<PathBuf> {
    if !repo.contains('/') {
        bail!("model.repo `{repo}` is not a Hugging Face repo id like Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice");
    }
    let advice = format!(
        "could not download {repo} from the Hugging Face Hub. Without network access, fetch it on \
         another machine with `huggingface-cli download {repo} --local-dir DIR`, copy DIR here and \
         start with --model-dir DIR"
    );
    progress.update(|p| {
        p.stage = LoadStage::Downloading;
        p.repo = Some(repo.to_string());
        p.files_total = REPO_FILES.len();
    });
    let api =
        hf_hub::api::sync::ApiBuilder::from_env().with_progress(false).build().context(advice.clone())?;
    let repo_api = api.model(repo.to_string());
    let cache = hf_hub::Cache::from_env().model(repo.to_string());
    let mut config = None;
    for (i, file) in REPO_FILES.iter().enumerate() {
        let path = match cache.get(file) {
            Some(path) => path,
            None => {
                tracing::info!(repo, file, "fetching");
                let reporter = FileProgress { progress, last_logged: Instant::now(), logged_tenth: 0 };
                repo_api
                    .download_with_progress(file, reporter)
                    .with_context(|| format!("{file}: {advice}"))?
            }
        };
        progress.update(|p| p.files_done = i + 1);
        if *file == "config.json" {
            config = Some(path);
        }
    }
    let config = config.expect("config.json is in REPO_FILES");
    Ok(config.parent().expect("a file has a parent").to_path_buf())
}
