//! A checkpoint directory in the Hugging Face layout, opened and checked up front.

use std::path::{Path, PathBuf};

use super::config::{read_json, GenerationConfig, ModelConfig, ModelType, SpeechTokenizerConfig};
use super::expected::{main_model_tensors, speech_tokenizer_tensors};
use super::tokenizer::TextTokenizer;
use super::weights::WeightFile;
use crate::error::{EngineError, Result};

/// Everything a Qwen3-TTS 12 Hz checkpoint directory holds, validated: every tensor's name,
/// shape and dtype agrees with the config before anything reaches the GPU.
#[derive(Debug)]
pub struct ModelDir {
    pub root: PathBuf,
    pub config: ModelConfig,
    pub generation: GenerationConfig,
    pub weights: WeightFile,
    pub tokenizer: TextTokenizer,
    pub speech_config: SpeechTokenizerConfig,
    pub speech_weights: WeightFile,
}

impl ModelDir {
    pub fn open(root: impl AsRef<Path>) -> Result<Self> {
        let root = root.as_ref().to_path_buf();
        if !root.is_dir() {
            return Err(EngineError::io(&root, "not a directory (expected a Qwen3-TTS checkpoint)"));
        }
        let config_path = root.join("config.json");
        let config: ModelConfig = read_json(&config_path)?;
        config.validate(&config_path)?;
        let generation_path = root.join("generation_config.json");
        let generation = if generation_path.exists() {
            read_json(&generation_path)?
        } else {
            tracing::warn!(path = %generation_path.display(), "missing; using the official defaults");
            GenerationConfig::default()
        };
        let weights = WeightFile::open(&root.join("model.safetensors"))?;
        weights.validate(&main_model_tensors(&config), config.tts_model_type.as_str())?;
        let tokenizer = TextTokenizer::from_dir(&root)?;
        let speech_dir = root.join("speech_tokenizer");
        let speech_config: SpeechTokenizerConfig = read_json(&speech_dir.join("config.json"))?;
        let speech_weights = WeightFile::open(&speech_dir.join("model.safetensors"))?;
        speech_weights.validate(&speech_tokenizer_tensors(&speech_config), &speech_config.model_type)?;
        Ok(ModelDir { root, config, generation, weights, tokenizer, speech_config, speech_weights })
    }

    pub fn model_type(&self) -> ModelType {
        self.config.tts_model_type
    }

    /// E.g. "Qwen3-TTS 12Hz 0.6B CustomVoice".
    pub fn describe(&self) -> String {
        let size = match self.config.tts_model_size.as_str() {
            "0b6" => "0.6B",
            "1b7" => "1.7B",
            other => other,
        };
        let kind = match self.model_type() {
            ModelType::Base => "Base",
            ModelType::CustomVoice => "CustomVoice",
            ModelType::VoiceDesign => "VoiceDesign",
        };
        format!("Qwen3-TTS 12Hz {size} {kind}")
    }
}
