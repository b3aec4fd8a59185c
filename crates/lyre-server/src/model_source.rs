//! Where the served checkpoint comes from: a local directory, a Hugging Face repo id
//! (downloaded to the Hugging Face cache when the network allows), or the built-in demo.

use std::path::PathBuf;

use anyhow::{bail, Context};
use lyre_engine::checkpoint::ModelDir;

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

    /// Opens (downloading or generating first where needed) and validates the checkpoint.
    pub fn open(&self) -> anyhow::Result<ModelDir> {
        let dir = match self {
            ModelSource::Dir(d) => d.clone(),
            ModelSource::Repo(id) => download(id)?,
            ModelSource::Demo => {
                let dir = crate::demo::default_dir();
                crate::demo::ensure(&dir)
                    .with_context(|| format!("writing the demo model to {}", dir.display()))?;
                dir
            }
        };
        Ok(ModelDir::open(&dir)?)
    }
}

fn download(repo: &str) -> anyhow::Result<PathBuf> {
    if !repo.contains('/') {
        bail!("model.repo `{repo}` is not a Hugging Face repo id like Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice");
    }
    let advice = format!(
        "could not download {repo} from the Hugging Face Hub. Without network access, fetch it on \
         another machine with `huggingface-cli download {repo} --local-dir DIR`, copy DIR here and \
         start with --model-dir DIR"
    );
    let api =
        hf_hub::api::sync::ApiBuilder::from_env().with_progress(true).build().context(advice.clone())?;
    let repo_api = api.model(repo.to_string());
    let mut config = None;
    for file in REPO_FILES {
        tracing::info!(repo, file, "fetching");
        let path = repo_api.get(file).with_context(|| format!("{file}: {advice}"))?;
        if *file == "config.json" {
            config = Some(path);
        }
    }
    let config = config.expect("config.json is in REPO_FILES");
    Ok(config.parent().expect("a file has a parent").to_path_buf())
}
