//! The speech tokenizer's encoder (Mimi, first 16 of 32 quantizers): 24 kHz audio → codec
//! frames, the reference codes of in-context (ICL) voice cloning.
//!
//! It is transformers' `MimiModel.encode` without the decoder half, as the official
//! `Qwen3TTSTokenizerV2Model.encode` calls it: SEANet conv encoder (`seanet`) → encoder
//! transformer (`transformer`) → stride-2 downsample conv (replicate padding) → split RVQ
//! (`quantizer`), keeping the first `encoder_valid_num_quantizers` codes and
//! `ceil(len / encode_downsample_rate)` frames. The wrapper's feature extractor neither pads nor
//! normalises a single clip, so the samples go in as they are.
//!
//! **CPU by design**: it runs once per uploaded voice, never per frame, so it stays off the GPU
//! worker. Everything is f32 (the speech tokenizer's weights are f32); convs are im2col × GEMM
//! (`matrixmultiply`) over chunks of rows spread across cores with rayon. At the real size a 5 s
//! clip costs about 0.64 s and a 60 s clip 7.7 s of CPU time, optimised (2-core AMD EPYC,
//! AVX-512; `tests/speech_encoder/real_size.rs` measures it, `docs/voice-cloning.md` has the
//! figures).

mod conv;
mod gemm;
mod quantizer;
mod seanet;
mod transformer;
mod weights;

use std::path::Path;

use conv::{CausalConv1d, ConvShape, PadMode, Pre};
use quantizer::SplitRvq;
use seanet::Seanet;
use transformer::Transformer;
use weights::Loader;

use crate::audio_input::{ENCODER_SAMPLE_RATE, MAX_REFERENCE_SECONDS};
use crate::checkpoint::config::SpeechTokenizerConfig;
use crate::checkpoint::weights::WeightFile;
use crate::checkpoint::ModelDir;
use crate::error::{EngineError, Result};

/// Codes per frame that Lyre's prompts use (`encoder_valid_num_quantizers`).
pub const CODES_PER_FRAME: usize = 16;

/// The longest clip `encode` accepts: the reference limit plus a second of slack, so memory stays
/// bounded (≈ 0.8 GB of activations at the real size) whatever the caller passes.
pub const MAX_ENCODE_SAMPLES: usize = (MAX_REFERENCE_SECONDS as usize + 1) * ENCODER_SAMPLE_RATE as usize;

/// The Mimi encoder weights (`encoder.*` in `speech_tokenizer/model.safetensors`).
pub struct SpeechEncoder {
    seanet: Seanet,
    transformer: Transformer,
    downsample: Option<CausalConv1d>,
    quantizer: SplitRvq,
    /// `encode_downsample_rate`: input samples per output frame.
    frame_hop: usize,
}

impl SpeechEncoder {
    pub fn load(model: &ModelDir) -> Result<Self> {
        let config_path = model.root.join("speech_tokenizer").join("config.json");
        Self::from_parts(&model.speech_config, &model.speech_weights, &config_path)
    }

    /// [`load`](Self::load) from a parsed `speech_tokenizer/config.json` (`config_path` names it
    /// in errors) and its weight file; only the `encoder.*` tensors are read.
    pub fn from_parts(st: &SpeechTokenizerConfig, weights: &WeightFile, config_path: &Path) -> Result<Self> {
        let c = &st.encoder_config;
        let w = Loader { file: weights, config_path };
        check_config(&w, st)?;
        let seanet = Seanet::load(&w, c)?;
        let transformer = Transformer::load(&w, c)?;
        let hop = seanet.hop();
        if hop == 0 || !st.encode_downsample_rate.is_multiple_of(hop) {
            return Err(top_error(config_path, "encode_downsample_rate", format!("not a multiple of {hop}")));
        }
        // MimiModel adds `downsample` (kernel 2·factor, stride 2, replicate, no bias) only when
        // the SEANet rate differs from the frame rate.
        let downsample = match st.encode_downsample_rate / hop {
            1 => None,
            2 => {
                let h = c.hidden_size;
                let shape = ConvShape { inp: h, out: h, kernel: 4, stride: 2, dilation: 1 };
                Some(w.conv("encoder.downsample.conv", shape, PadMode::Replicate, false)?)
            }
            f => {
                let msg = format!("a {f}× frame-rate downsample is not supported (Mimi's stride is 2)");
                return Err(top_error(config_path, "encode_downsample_rate", msg));
            }
        };
        let quantizer = SplitRvq::load(&w, c)?;
        debug_assert_eq!(transformer.hidden(), seanet.out_channels);
        Ok(SpeechEncoder { seanet, transformer, downsample, quantizer, frame_hop: st.encode_downsample_rate })
    }

    /// `ceil(len / 1920)` frames of 16 codes each. Any clip of 1 ..= [`MAX_ENCODE_SAMPLES`]
    /// finite samples is encoded (one sample already gives one frame, as in Mimi); an empty,
    /// too long or non-finite input is a [`EngineError::ReferenceAudio`].
    pub fn encode(&self, wav_24k: &[f32]) -> Result<Vec<[u16; 16]>> {
        let len = wav_24k.len();
        if len == 0 {
            return Err(EngineError::ReferenceAudio("the clip is empty".into()));
        }
        if len > MAX_ENCODE_SAMPLES {
            return Err(EngineError::ReferenceAudio(format!(
                "the clip has {len} samples; the speech encoder takes at most {MAX_ENCODE_SAMPLES}"
            )));
        }
        if let Some(i) = wav_24k.iter().position(|v| !v.is_finite()) {
            return Err(EngineError::ReferenceAudio(format!("sample {i} is not a finite number")));
        }
        let (mut x, t) = self.seanet.forward(wav_24k);
        self.transformer.forward(&mut x, t);
        let (x, frames) = match &self.downsample {
            Some(conv) => (conv.forward(&x, t, Pre::None), conv.shape.output_len(t)),
            None => (x, t),
        };
        let codes = self.quantizer.encode(&x, frames, CODES_PER_FRAME);
        let keep = len.div_ceil(self.frame_hop).min(frames);
        Ok(codes.chunks_exact(CODES_PER_FRAME).take(keep).map(|c| std::array::from_fn(|i| c[i])).collect())
    }

    /// Number of quantizer layers loaded (all of `num_quantizers`, though 16 are used).
    pub fn quantizer_layers(&self) -> usize {
        self.quantizer.layers()
    }
}

fn top_error(path: &Path, field: &str, message: String) -> EngineError {
    EngineError::Config { path: path.to_path_buf(), field: field.to_string(), message }
}

/// The config values this implementation relies on.
fn check_config(w: &Loader<'_>, st: &SpeechTokenizerConfig) -> Result<()> {
    let c = &st.encoder_config;
    if st.encoder_valid_num_quantizers != CODES_PER_FRAME {
        let msg =
            format!("Lyre uses {CODES_PER_FRAME} codes per frame, found {}", st.encoder_valid_num_quantizers);
        return Err(top_error(w.config_path, "encoder_valid_num_quantizers", msg));
    }
    if c.num_quantizers < CODES_PER_FRAME || c.num_semantic_quantizers > CODES_PER_FRAME {
        let msg = format!("{} quantizers cannot give {CODES_PER_FRAME} codes", c.num_quantizers);
        return Err(w.config_error("num_quantizers", msg));
    }
    if st.input_sample_rate != ENCODER_SAMPLE_RATE {
        let msg = format!("{} Hz; the encoder input is {ENCODER_SAMPLE_RATE} Hz", st.input_sample_rate);
        return Err(top_error(w.config_path, "input_sample_rate", msg));
    }
    let checks = [
        ("audio_channels", c.audio_channels == 1, "only mono input is supported"),
        ("use_causal_conv", c.use_causal_conv, "only causal convolutions are supported"),
        ("hidden_act", c.hidden_act == "gelu", "only `gelu` is supported"),
        ("attention_bias", !c.attention_bias, "attention biases are not supported"),
        ("compress", c.compress > 0, "must be positive"),
    ];
    for (field, ok, message) in checks {
        if !ok {
            return Err(w.config_error(field, message.into()));
        }
    }
    Ok(())
}
