//! Serde mirrors of the checkpoint's JSON files: `config.json`, `generation_config.json` and
//! `speech_tokenizer/config.json`. Field names are those of the Hugging Face files.

use std::collections::BTreeMap;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::error::{EngineError, Result};

/// Which of the three Qwen3-TTS checkpoints this is (`tts_model_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelType {
    Base,
    CustomVoice,
    VoiceDesign,
}

impl ModelType {
    pub fn as_str(self) -> &'static str {
        match self {
            ModelType::Base => "base",
            ModelType::CustomVoice => "custom_voice",
            ModelType::VoiceDesign => "voice_design",
        }
    }
}

/// `config.json` of the main model.
#[derive(Debug, Clone, Deserialize)]
pub struct ModelConfig {
    pub tts_model_type: ModelType,
    /// `"0b6"` or `"1b7"`.
    pub tts_model_size: String,
    pub tts_bos_token_id: u32,
    pub tts_eos_token_id: u32,
    pub tts_pad_token_id: u32,
    pub im_start_token_id: u32,
    pub im_end_token_id: u32,
    pub assistant_token_id: u32,
    #[serde(default)]
    pub speaker_encoder_config: SpeakerEncoderConfig,
    pub talker_config: TalkerConfig,
}

/// `talker_config`: the 28-layer Qwen3 decoder that produces the first codebook.
#[derive(Debug, Clone, Deserialize)]
pub struct TalkerConfig {
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    pub head_dim: usize,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
    #[serde(default)]
    pub rope_scaling: Option<RopeScaling>,
    pub max_position_embeddings: usize,
    pub vocab_size: usize,
    pub text_vocab_size: usize,
    pub text_hidden_size: usize,
    pub num_code_groups: usize,
    pub hidden_act: String,
    pub codec_bos_id: u32,
    pub codec_eos_token_id: u32,
    pub codec_pad_id: u32,
    pub codec_think_id: u32,
    pub codec_nothink_id: u32,
    pub codec_think_bos_id: u32,
    pub codec_think_eos_id: u32,
    pub codec_language_id: BTreeMap<String, u32>,
    #[serde(default)]
    pub spk_id: BTreeMap<String, u32>,
    #[serde(default)]
    pub spk_is_dialect: BTreeMap<String, Dialect>,
    pub code_predictor_config: CodePredictorConfig,
}

/// `spk_is_dialect` values are either `false` or the name of a dialect language.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Dialect {
    None(bool),
    Language(String),
}

impl Dialect {
    pub fn language(&self) -> Option<&str> {
        match self {
            Dialect::Language(s) => Some(s),
            Dialect::None(_) => None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct RopeScaling {
    #[serde(default)]
    pub interleaved: bool,
    #[serde(default)]
    pub mrope_section: Vec<usize>,
    #[serde(default)]
    pub rope_type: Option<String>,
}

/// `code_predictor_config`: the 5-layer "sub-talker" that predicts codebooks 1..15.
#[derive(Debug, Clone, Deserialize)]
pub struct CodePredictorConfig {
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    pub head_dim: usize,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
    pub vocab_size: usize,
    pub num_code_groups: usize,
    pub max_position_embeddings: usize,
}

/// `speaker_encoder_config` (ECAPA-TDNN); only the Base models carry its weights.
#[derive(Debug, Clone, Deserialize)]
pub struct SpeakerEncoderConfig {
    #[serde(default = "default_enc_dim")]
    pub enc_dim: usize,
    #[serde(default = "default_sample_rate")]
    pub sample_rate: u32,
    #[serde(default = "default_mel_dim")]
    pub mel_dim: usize,
    #[serde(default = "default_enc_channels")]
    pub enc_channels: Vec<usize>,
    #[serde(default = "default_enc_kernel_sizes")]
    pub enc_kernel_sizes: Vec<usize>,
    #[serde(default = "default_enc_dilations")]
    pub enc_dilations: Vec<usize>,
    #[serde(default = "default_enc_attention_channels")]
    pub enc_attention_channels: usize,
    #[serde(default = "default_enc_res2net_scale")]
    pub enc_res2net_scale: usize,
    #[serde(default = "default_enc_se_channels")]
    pub enc_se_channels: usize,
}

fn default_enc_dim() -> usize {
    1024
}
fn default_sample_rate() -> u32 {
    24000
}
fn default_mel_dim() -> usize {
    128
}
fn default_enc_channels() -> Vec<usize> {
    vec![512, 512, 512, 512, 1536]
}
fn default_enc_kernel_sizes() -> Vec<usize> {
    vec![5, 3, 3, 3, 1]
}
fn default_enc_dilations() -> Vec<usize> {
    vec![1, 2, 3, 4, 1]
}
fn default_enc_attention_channels() -> usize {
    128
}
fn default_enc_res2net_scale() -> usize {
    8
}
fn default_enc_se_channels() -> usize {
    128
}

impl Default for SpeakerEncoderConfig {
    fn default() -> Self {
        SpeakerEncoderConfig {
            enc_dim: default_enc_dim(),
            sample_rate: default_sample_rate(),
            mel_dim: default_mel_dim(),
            enc_channels: default_enc_channels(),
            enc_kernel_sizes: default_enc_kernel_sizes(),
            enc_dilations: default_enc_dilations(),
            enc_attention_channels: default_enc_attention_channels(),
            enc_res2net_scale: default_enc_res2net_scale(),
            enc_se_channels: default_enc_se_channels(),
        }
    }
}

/// `generation_config.json`: the sampling defaults. Missing keys take the official wrapper's
/// fallbacks (the same values, with `max_new_tokens` 2048).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct GenerationConfig {
    #[serde(default = "yes")]
    pub do_sample: bool,
    #[serde(default = "default_repetition_penalty")]
    pub repetition_penalty: f32,
    #[serde(default = "default_temperature")]
    pub temperature: f32,
    #[serde(default = "default_top_p")]
    pub top_p: f32,
    #[serde(default = "default_top_k")]
    pub top_k: u32,
    #[serde(default = "yes")]
    pub subtalker_dosample: bool,
    #[serde(default = "default_temperature")]
    pub subtalker_temperature: f32,
    #[serde(default = "default_top_p")]
    pub subtalker_top_p: f32,
    #[serde(default = "default_top_k")]
    pub subtalker_top_k: u32,
    #[serde(default = "default_max_new_tokens")]
    pub max_new_tokens: u32,
}

fn yes() -> bool {
    true
}
fn default_repetition_penalty() -> f32 {
    1.05
}
fn default_temperature() -> f32 {
    0.9
}
fn default_top_p() -> f32 {
    1.0
}
fn default_top_k() -> u32 {
    50
}
fn default_max_new_tokens() -> u32 {
    2048
}

impl Default for GenerationConfig {
    fn default() -> Self {
        serde_json::from_str("{}").expect("every field has a default")
    }
}

/// `speech_tokenizer/config.json` (the 12 Hz codec).
#[derive(Debug, Clone, Deserialize)]
pub struct SpeechTokenizerConfig {
    pub model_type: String,
    pub encoder_valid_num_quantizers: usize,
    pub input_sample_rate: u32,
    pub output_sample_rate: u32,
    pub decode_upsample_rate: usize,
    pub encode_downsample_rate: usize,
    pub decoder_config: DecoderConfig,
    pub encoder_config: MimiEncoderConfig,
}

/// The speech-tokenizer decoder: codes → 24 kHz waveform.
#[derive(Debug, Clone, Deserialize)]
pub struct DecoderConfig {
    pub latent_dim: usize,
    pub codebook_dim: usize,
    pub codebook_size: usize,
    pub decoder_dim: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub head_dim: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    pub num_hidden_layers: usize,
    pub num_quantizers: usize,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
    pub sliding_window: usize,
    pub upsample_rates: Vec<usize>,
    pub upsampling_ratios: Vec<usize>,
    pub vector_quantization_hidden_dimension: usize,
    #[serde(default)]
    pub max_position_embeddings: usize,
}

/// The speech-tokenizer encoder (transformers' `MimiConfig`); used for voice cloning.
#[derive(Debug, Clone, Deserialize)]
pub struct MimiEncoderConfig {
    pub hidden_size: usize,
    pub num_filters: usize,
    pub upsampling_ratios: Vec<usize>,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    pub head_dim: usize,
    pub intermediate_size: usize,
    pub num_quantizers: usize,
    pub num_semantic_quantizers: usize,
    pub codebook_size: usize,
    pub codebook_dim: usize,
    pub vector_quantization_hidden_dimension: usize,
    pub compress: usize,
    pub kernel_size: usize,
    pub last_kernel_size: usize,
    pub residual_kernel_size: usize,
    pub dilation_growth_rate: usize,
    pub num_residual_layers: usize,
    pub sliding_window: usize,
    pub rope_theta: f64,
    pub norm_eps: f64,
    #[serde(default)]
    pub use_conv_shortcut: bool,
    #[serde(default = "default_audio_channels")]
    pub audio_channels: usize,
    pub sampling_rate: u32,
    #[serde(default)]
    pub upsample_groups: usize,
    /// Activation of the transformer MLP; transformers' `"gelu"` is the exact (erf) GELU.
    #[serde(default = "default_mimi_act")]
    pub hidden_act: String,
    /// Lyre implements the causal convolutions only (the released checkpoints are causal).
    #[serde(default = "yes")]
    pub use_causal_conv: bool,
    /// Padding of the SEANet convs (the downsample conv always replicates).
    #[serde(default = "default_pad_mode")]
    pub pad_mode: String,
    #[serde(default)]
    pub attention_bias: bool,
}

fn default_audio_channels() -> usize {
    1
}
fn default_mimi_act() -> String {
    "gelu".into()
}
fn default_pad_mode() -> String {
    "constant".into()
}

/// Reads and parses one JSON file; errors name the file and, where serde knows it, the field.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(|e| EngineError::io(path, e))?;
    serde_json::from_str(&text)
        .map_err(|e| EngineError::Json { path: path.to_path_buf(), message: e.to_string() })
}

impl ModelConfig {
    /// Semantic checks that serde cannot express. `path` is the file the config came from.
    pub fn validate(&self, path: &Path) -> Result<()> {
        let bad = |field: &str, message: String| EngineError::Config {
            path: path.to_path_buf(),
            field: field.to_string(),
            message,
        };
        let t = &self.talker_config;
        let c = &t.code_predictor_config;
        for (name, heads, kv) in [
            ("talker_config.num_key_value_heads", t.num_attention_heads, t.num_key_value_heads),
            (
                "talker_config.code_predictor_config.num_key_value_heads",
                c.num_attention_heads,
                c.num_key_value_heads,
            ),
        ] {
            if kv == 0 || heads % kv != 0 {
                return Err(bad(name, format!("{kv} does not divide {heads} attention heads")));
            }
        }
        if t.num_code_groups != 16 || c.num_code_groups != t.num_code_groups {
            return Err(bad(
                "talker_config.num_code_groups",
                format!("Lyre supports 16 code groups, found {}", t.num_code_groups),
            ));
        }
        if t.vocab_size < 1024 || c.vocab_size > t.vocab_size {
            return Err(bad("talker_config.vocab_size", format!("{} is too small", t.vocab_size)));
        }
        if t.hidden_act != "silu" {
            return Err(bad("talker_config.hidden_act", format!("`{}` is not silu", t.hidden_act)));
        }
        for (field, id) in [
            ("talker_config.codec_eos_token_id", t.codec_eos_token_id),
            ("talker_config.codec_bos_id", t.codec_bos_id),
            ("talker_config.codec_pad_id", t.codec_pad_id),
        ] {
            if id as usize >= t.vocab_size {
                return Err(bad(field, format!("{id} is outside the codec vocabulary")));
            }
        }
        for (field, id) in [
            ("tts_bos_token_id", self.tts_bos_token_id),
            ("tts_eos_token_id", self.tts_eos_token_id),
            ("tts_pad_token_id", self.tts_pad_token_id),
        ] {
            if id as usize >= t.text_vocab_size {
                return Err(bad(field, format!("{id} is outside the text vocabulary")));
            }
        }
        for (name, dialect) in &t.spk_is_dialect {
            if let Some(lang) = dialect.language() {
                if !t.codec_language_id.contains_key(lang) {
                    return Err(bad(
                        "talker_config.spk_is_dialect",
                        format!("speaker `{name}` has dialect `{lang}`, which has no language id"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// True when the code predictor is narrower than the talker, so the checkpoint carries
    /// `small_to_mtp_projection` (the 1.7B models).
    pub fn has_mtp_projection(&self) -> bool {
        self.talker_config.hidden_size != self.talker_config.code_predictor_config.hidden_size
    }
}
