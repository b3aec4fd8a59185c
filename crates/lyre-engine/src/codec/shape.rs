//! The decoder's sizes, derived from `speech_tokenizer/config.json` and checked once, plus the
//! constants the official code fixes rather than configures.

use std::path::Path;

use crate::checkpoint::config::{DecoderConfig, SpeechTokenizerConfig};
use crate::error::{EngineError, Result};
use crate::kernels::attention::Heads;

/// Kernel of the plain convs (decoder input and output conv, residual-unit conv1) and of the
/// ConvNeXt depthwise conv.
pub const KERNEL: usize = 7;
/// Kernel of `decoder.pre_conv`.
pub const PRE_CONV_KERNEL: usize = 3;
/// Dilations of the three residual units of each vocoder block.
pub const DILATIONS: [usize; 3] = [1, 3, 9];
/// ConvNeXt hidden width = this × channels.
pub const CONVNEXT_EXPANSION: usize = 4;
/// ConvNeXt LayerNorm epsilon.
pub const LAYER_NORM_EPS: f32 = 1e-6;
/// Codebook vectors are `embedding_sum / max(cluster_usage, this)`.
pub const CLUSTER_USAGE_EPS: f32 = 1e-5;
/// Codebooks of the semantic (`rvq_first`) group.
pub const SEMANTIC_BOOKS: usize = 1;
/// Codebooks per frame that the decoder reads (and the engine writes per session).
pub const BOOKS: usize = 16;
/// Largest attention head the attention kernels hold.
const MAX_HEAD_DIM: usize = 256;

/// Every size the decoder's buffers and dispatches depend on.
#[derive(Debug, Clone)]
pub struct DecoderShape {
    pub books: usize,
    pub codebook_size: usize,
    /// Width of one codebook vector (`codebook_dim / 2`).
    pub book_dim: usize,
    /// Width after the RVQ output projections.
    pub codebook_dim: usize,
    pub latent: usize,
    pub hidden: usize,
    pub inter: usize,
    pub layers: usize,
    pub heads: Heads,
    pub rms_eps: f32,
    pub rope_theta: f64,
    pub window: usize,
    /// ConvTranspose + ConvNeXt upsampling factors (2, 2).
    pub upsampling_ratios: Vec<usize>,
    /// Vocoder block strides (8, 5, 4, 3).
    pub upsample_rates: Vec<usize>,
    pub decoder_dim: usize,
}

impl DecoderShape {
    /// Derives and checks the shape; errors name the config field.
    pub fn new(cfg: &SpeechTokenizerConfig, config_path: &Path) -> Result<Self> {
        let c = &cfg.decoder_config;
        let shape = DecoderShape {
            books: c.num_quantizers,
            codebook_size: c.codebook_size,
            book_dim: c.codebook_dim / 2,
            codebook_dim: c.codebook_dim,
            latent: c.latent_dim,
            hidden: c.hidden_size,
            inter: c.intermediate_size,
            layers: c.num_hidden_layers,
            heads: Heads {
                n_heads: c.num_attention_heads as u32,
                n_kv_heads: c.num_key_value_heads as u32,
                head_dim: c.head_dim as u32,
            },
            rms_eps: c.rms_norm_eps as f32,
            rope_theta: c.rope_theta,
            window: c.sliding_window,
            upsampling_ratios: c.upsampling_ratios.clone(),
            upsample_rates: c.upsample_rates.clone(),
            decoder_dim: c.decoder_dim,
        };
        shape.validate(c, cfg.decode_upsample_rate, config_path)?;
        Ok(shape)
    }

    fn validate(&self, c: &DecoderConfig, upsample_rate: usize, path: &Path) -> Result<()> {
        let bad = |field: &str, message: String| EngineError::Config {
            path: path.to_path_buf(),
            field: format!("decoder_config.{field}"),
            message,
        };
        if self.books != BOOKS {
            return Err(bad(
                "num_quantizers",
                format!("Lyre decodes {BOOKS} codebooks, found {}", self.books),
            ));
        }
        if self.codebook_size == 0 || self.book_dim == 0 || !self.codebook_dim.is_multiple_of(2) {
            return Err(bad("codebook_dim", format!("{} is not a positive even width", c.codebook_dim)));
        }
        let h = self.heads;
        if h.n_kv_heads == 0 || !h.n_heads.is_multiple_of(h.n_kv_heads) {
            return Err(bad("num_key_value_heads", format!("{} does not divide the heads", h.n_kv_heads)));
        }
        if h.head_dim == 0 || !h.head_dim.is_multiple_of(4) || h.head_dim as usize > MAX_HEAD_DIM {
            return Err(bad("head_dim", format!("{} is not a multiple of 4 ≤ {MAX_HEAD_DIM}", h.head_dim)));
        }
        if self.window == 0 {
            return Err(bad("sliding_window", "must be positive".into()));
        }
        for (field, width) in [
            ("latent_dim", self.latent),
            ("hidden_size", self.hidden),
            ("intermediate_size", self.inter),
            ("num_attention_heads", h.q_width() as usize),
        ] {
            if width == 0 || width % 4 != 0 {
                return Err(bad(field, format!("width {width} is not a positive multiple of 4")));
            }
        }
        if self.upsample_rates.is_empty() || self.block_width(self.upsample_rates.len()) == 0 {
            return Err(bad("decoder_dim", format!("{} cannot halve once per block", self.decoder_dim)));
        }
        if self.upsampling_ratios.iter().chain(&self.upsample_rates).any(|&r| r == 0) {
            return Err(bad("upsample_rates", "factors must be positive".into()));
        }
        if self.samples_per_frame() != upsample_rate {
            return Err(bad(
                "upsample_rates",
                format!(
                    "the factors multiply to {} samples per frame, but decode_upsample_rate is {upsample_rate}",
                    self.samples_per_frame()
                ),
            ));
        }
        Ok(())
    }

    /// Channels entering vocoder block `i` (and leaving block `i - 1`); `block_width(0)` is
    /// `decoder_dim`.
    pub fn block_width(&self, i: usize) -> usize {
        self.decoder_dim.checked_shr(i as u32).unwrap_or(0)
    }

    /// Rows per frame after the ConvNeXt upsampling.
    pub fn upsampled_rows(&self) -> usize {
        self.upsampling_ratios.iter().product()
    }

    /// Rows per frame entering vocoder block `i` (after blocks `0..i`).
    pub fn block_rows(&self, i: usize) -> usize {
        self.upsampled_rows() * self.upsample_rates[..i].iter().product::<usize>()
    }

    /// Output samples per frame (1920).
    pub fn samples_per_frame(&self) -> usize {
        self.block_rows(self.upsample_rates.len())
    }

    /// Width of the final conv's input.
    pub fn output_width(&self) -> usize {
        self.block_width(self.upsample_rates.len())
    }
}
