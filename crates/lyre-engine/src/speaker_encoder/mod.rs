//! The Base models' speaker encoder (ECAPA-TDNN): 24 kHz audio → log-mel → x-vector of talker
//! width, which takes the speaker position of the prompt.
//!
//! **CPU by design.** It runs once per uploaded voice, never per frame, so it stays off the GPU
//! queue: f32 on the CPU, each convolution an im2col × SGEMM (`matrixmultiply`). A 10 s clip
//! through the real 1.7B encoder (channels 512 / 1536) is ≈ 10 GFLOP.
//!
//! Semantics follow `Qwen3TTSSpeakerEncoder` and `extract_speaker_embedding` in the official
//! `qwen_tts/core/models/modeling_qwen3_tts.py` (qwen-tts 0.1.1):
//! `blocks.0` TDNN (k5) → `blocks.1..n-2` SE-Res2Net (k3, dilations 2, 3, 4) → `mfa` TDNN over
//! the concatenated SE-Res2Net outputs → `asp` attentive statistics pooling → `fc` (k1).
//! Every conv is "same" with reflect padding, each TDNN ends in ReLU, and there is no BatchNorm.

mod blocks;
mod conv;
pub mod mel;
mod pooling;

use blocks::{SeRes2NetBlock, Tdnn};
use conv::{Act, Conv1d, WeightSource};
use pooling::AttentiveStatsPooling;

use std::path::{Path, PathBuf};

use crate::checkpoint::config::{ModelType, SpeakerEncoderConfig};
use crate::checkpoint::ModelDir;
use crate::error::{EngineError, Result};
pub use mel::{LogMel, MelFrontEnd};

/// The ECAPA-TDNN weights of a Base checkpoint (`speaker_encoder.*` in `model.safetensors`).
#[derive(Debug)]
pub struct SpeakerEncoder {
    mel: MelFrontEnd,
    first: Tdnn,
    blocks: Vec<SeRes2NetBlock>,
    mfa: Tdnn,
    asp: AttentiveStatsPooling,
    fc: Conv1d,
    enc_dim: usize,
}

impl SpeakerEncoder {
    /// Fails for checkpoints without a speaker encoder (CustomVoice, VoiceDesign).
    pub fn load(model: &ModelDir) -> Result<Self> {
        if model.model_type() != ModelType::Base
            || !model.weights.contains("speaker_encoder.blocks.0.conv.weight")
        {
            return Err(EngineError::ReferenceAudio(format!(
                "voice cloning needs a Base checkpoint; {} has no speaker encoder",
                model.describe()
            )));
        }
        let config_path = model.root.join("config.json");
        Self::build(&model.config.speaker_encoder_config, &model.weights, &config_path)
    }

    /// An encoder of `cfg`'s shape with seeded random weights (fan-in scaled): for benchmarks
    /// of real-size configs without a real checkpoint.
    pub fn with_random_weights(cfg: &SpeakerEncoderConfig, seed: u64) -> Result<Self> {
        let source = RandomWeights { seed, path: PathBuf::from("<random weights>") };
        Self::build(cfg, &source, &source.path)
    }

    fn build(cfg: &SpeakerEncoderConfig, w: &dyn WeightSource, config_path: &Path) -> Result<Self> {
        check_config(cfg, config_path)?;
        let ch = &cfg.enc_channels;
        let (k, d) = (&cfg.enc_kernel_sizes, &cfg.enc_dilations);
        let last = ch.len() - 1;
        let p = "speaker_encoder";
        let first = Tdnn::load(w, &format!("{p}.blocks.0"), ch[0], cfg.mel_dim, k[0], d[0])?;
        let blocks = (1..last)
            .map(|i| {
                SeRes2NetBlock::load(
                    w,
                    &format!("{p}.blocks.{i}"),
                    ch[i - 1],
                    ch[i],
                    k[i],
                    d[i],
                    cfg.enc_res2net_scale,
                    cfg.enc_se_channels,
                )
            })
            .collect::<Result<Vec<_>>>()?;
        let mfa = Tdnn::load(w, &format!("{p}.mfa"), ch[last], ch[last], k[last], d[last])?;
        let asp = AttentiveStatsPooling::load(w, &format!("{p}.asp"), ch[last], cfg.enc_attention_channels)?;
        let fc = Conv1d::load(w, &format!("{p}.fc"), cfg.enc_dim, 2 * ch[last], 1, 1)?;
        Ok(SpeakerEncoder { mel: MelFrontEnd::new(), first, blocks, mfa, asp, fc, enc_dim: cfg.enc_dim })
    }

    /// The x-vector width (`enc_dim`, the talker's hidden size).
    pub fn dim(&self) -> usize {
        self.enc_dim
    }

    /// The log-mel spectrogram the network sees (exposed for tests and diagnostics).
    pub fn log_mel(&self, wav_24k: &[f32]) -> Result<LogMel> {
        self.mel.compute(wav_24k)
    }

    /// The x-vector (`enc_dim` values) of 24 kHz mono audio.
    pub fn embed(&self, wav_24k: &[f32]) -> Result<Vec<f32>> {
        if let Some(i) = wav_24k.iter().position(|x| !x.is_finite()) {
            return Err(EngineError::ReferenceAudio(format!("sample {i} is not a finite number")));
        }
        // Each conv refuses inputs shorter than its reflect padding (as PyTorch does).
        self.embed_mel(&self.mel.compute(wav_24k)?)
    }

    /// The x-vector of a log-mel spectrogram (`frames × 128`, as [`Self::log_mel`] returns).
    pub fn embed_mel(&self, mel: &LogMel) -> Result<Vec<f32>> {
        // (frames, mels) → (mels, frames), as the official forward's transpose(1, 2).
        let (t, m) = (mel.frames, mel::N_MELS);
        if mel.data.len() != t * m {
            return Err(EngineError::ReferenceAudio(format!(
                "a log-mel of {t} frames needs {} values, not {}",
                t * m,
                mel.data.len()
            )));
        }
        let mut x = vec![0f32; m * t];
        for (f, row) in mel.data.chunks_exact(m).enumerate() {
            for (b, &v) in row.iter().enumerate() {
                x[b * t + f] = v;
            }
        }
        let mut h = self.first.forward(&Act::new(m, t, x))?;
        let mut outputs = Vec::with_capacity(self.blocks.len());
        for block in &self.blocks {
            h = block.forward(&h)?;
            outputs.push(h.clone());
        }
        let h = self.mfa.forward(&Act::concat(&outputs.iter().collect::<Vec<_>>()))?;
        let pooled = self.asp.forward(&h)?;
        Ok(self.fc.forward_vec(&pooled))
    }
}

fn config_error(path: &Path, field: &str, message: String) -> EngineError {
    EngineError::Config {
        path: path.to_path_buf(),
        field: format!("speaker_encoder_config.{field}"),
        message,
    }
}

/// The structural facts `build` relies on: the fixed front end, equal list lengths, ≥ 3 layers,
/// and an `mfa` input width (the SE-Res2Net outputs concatenated) equal to its declared width.
fn check_config(cfg: &SpeakerEncoderConfig, path: &Path) -> Result<()> {
    if cfg.mel_dim != mel::N_MELS || cfg.sample_rate != mel::SAMPLE_RATE {
        return Err(config_error(
            path,
            "mel_dim",
            format!(
                "the front end is {} mels at {} Hz; the config says {} at {}",
                mel::N_MELS,
                mel::SAMPLE_RATE,
                cfg.mel_dim,
                cfg.sample_rate
            ),
        ));
    }
    let ch = &cfg.enc_channels;
    if ch.len() < 3 || cfg.enc_kernel_sizes.len() != ch.len() || cfg.enc_dilations.len() != ch.len() {
        return Err(config_error(
            path,
            "enc_channels",
            "enc_channels, enc_kernel_sizes and enc_dilations need the same length (≥ 3)".into(),
        ));
    }
    let concat: usize = ch[1..ch.len() - 1].iter().sum();
    if concat != ch[ch.len() - 1] {
        return Err(config_error(
            path,
            "enc_channels",
            format!("the last width must be the sum of the SE-Res2Net widths ({concat})"),
        ));
    }
    if cfg.enc_kernel_sizes.contains(&0) {
        return Err(config_error(path, "enc_kernel_sizes", "a kernel size is 0".into()));
    }
    Ok(())
}

/// Seeded uniform weights in ±1/√fan_in (biases too), as PyTorch's default Conv1d init.
struct RandomWeights {
    seed: u64,
    path: PathBuf,
}

impl WeightSource for RandomWeights {
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let fan_in: usize = if shape.len() == 3 { shape[1] * shape[2] } else { shape[0] };
        let bound = 1.0 / (fan_in.max(1) as f64).sqrt();
        // splitmix64 over (seed, name): deterministic and independent per tensor.
        let mut state = name.bytes().fold(self.seed ^ 0x9E37_79B9_7F4A_7C15, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3)
        });
        let n: usize = shape.iter().product();
        Ok((0..n)
            .map(|_| {
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
                let u = (z >> 11) as f64 / (1u64 << 53) as f64;
                ((2.0 * u - 1.0) * bound) as f32
            })
            .collect())
    }

    fn path(&self) -> &Path {
        &self.path
    }
}
