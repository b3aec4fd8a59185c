//! `MimiEncoder`, the SEANet conv encoder: a k7 conv to `num_filters`, then for each ratio of
//! `upsampling_ratios` in reverse (4, 5, 6, 8) residual blocks and ELU + a strided conv
//! (kernel 2·ratio) doubling the channels, then ELU + the last conv to `hidden_size`.

use super::conv::{CausalConv1d, ConvShape, PadMode, Pre};
use super::gemm::par_rows;
use super::weights::Loader;
use crate::checkpoint::config::MimiEncoderConfig;
use crate::error::Result;

/// `MimiResnetBlock`: x + conv(1×1)(ELU(conv(k, dilation)(ELU(x)))), optionally with a 1×1 conv
/// shortcut.
struct ResBlock {
    conv1: CausalConv1d,
    conv2: CausalConv1d,
    shortcut: Option<CausalConv1d>,
}

impl ResBlock {
    /// `x` (`len × channels`) → the block's output, computed chunk by chunk: `conv2` is 1×1, so
    /// each chunk's hidden rows are made and used at once and the hidden activations of the whole
    /// clip never exist.
    fn forward(&self, x: &[f32], len: usize) -> Vec<f32> {
        let ch = self.conv2.shape.out;
        let hidden = self.conv1.shape.out;
        let mut y = vec![0.0f32; len * ch];
        par_rows(&mut y, ch, self.conv1.chunk_rows(len), |t0, chunk| {
            let n = chunk.len() / ch;
            let mut h = vec![0.0f32; n * hidden];
            self.conv1.forward_rows(x, len, Pre::Elu, t0, &mut h);
            self.conv2.forward_rows(&h, n, Pre::Elu, 0, chunk);
            let rows = t0 * ch..(t0 + n) * ch;
            match &self.shortcut {
                Some(conv) => {
                    let mut r = vec![0.0f32; n * ch];
                    conv.forward_rows(x, len, Pre::None, t0, &mut r);
                    chunk.iter_mut().zip(&r).for_each(|(v, r)| *v += r);
                }
                None => chunk.iter_mut().zip(&x[rows]).for_each(|(v, x)| *v += x),
            }
        });
        y
    }
}

/// One downsampling stage: residual blocks at `channels`, then ELU + the strided conv.
struct Stage {
    blocks: Vec<ResBlock>,
    down: CausalConv1d,
}

pub(super) struct Seanet {
    first: CausalConv1d,
    stages: Vec<Stage>,
    last: CausalConv1d,
    /// Channels of the output (`hidden_size`).
    pub(super) out_channels: usize,
}

impl Seanet {
    pub(super) fn load(w: &Loader<'_>, c: &MimiEncoderConfig) -> Result<Self> {
        let pad = match c.pad_mode.as_str() {
            "constant" => PadMode::Zeros,
            "replicate" => PadMode::Replicate,
            other => {
                return Err(w.config_error("pad_mode", format!("`{other}` is not supported")));
            }
        };
        let layer = |i: usize| format!("encoder.encoder.layers.{i}");
        let plain = |inp, out, kernel| ConvShape { inp, out, kernel, stride: 1, dilation: 1 };
        let mut ch = c.num_filters;
        let first =
            w.conv(&format!("{}.conv", layer(0)), plain(c.audio_channels, ch, c.kernel_size), pad, true)?;
        let hidden = |dim: usize| dim / c.compress.max(1);
        let mut index = 1;
        let mut stages = Vec::with_capacity(c.upsampling_ratios.len());
        for &ratio in c.upsampling_ratios.iter().rev() {
            let mut blocks = Vec::with_capacity(c.num_residual_layers);
            for j in 0..c.num_residual_layers {
                let p = layer(index);
                let dilation = c.dilation_growth_rate.checked_pow(j as u32).unwrap_or(0);
                let k = c.residual_kernel_size;
                let s1 = ConvShape { inp: ch, out: hidden(ch), kernel: k, stride: 1, dilation };
                let conv1 = w.conv(&format!("{p}.block.1.conv"), s1, pad, true)?;
                let conv2 = w.conv(&format!("{p}.block.3.conv"), plain(hidden(ch), ch, 1), pad, true)?;
                let shortcut = if c.use_conv_shortcut {
                    Some(w.conv(&format!("{p}.shortcut.conv"), plain(ch, ch, 1), pad, true)?)
                } else {
                    None
                };
                blocks.push(ResBlock { conv1, conv2, shortcut });
                index += 1;
            }
            index += 1; // the ELU
            let shape = ConvShape { inp: ch, out: 2 * ch, kernel: 2 * ratio, stride: ratio, dilation: 1 };
            let down = w.conv(&format!("{}.conv", layer(index)), shape, pad, true)?;
            stages.push(Stage { blocks, down });
            index += 1;
            ch *= 2;
        }
        index += 1; // the ELU
        let last_shape = plain(ch, c.hidden_size, c.last_kernel_size);
        let last = w.conv(&format!("{}.conv", layer(index)), last_shape, pad, true)?;
        Ok(Seanet { first, stages, last, out_channels: c.hidden_size })
    }

    /// Total stride (product of the ratios).
    pub(super) fn hop(&self) -> usize {
        self.stages.iter().map(|s| s.down.shape.stride).product()
    }

    /// Mono `wav` (≥ 1 sample) → `ceil(len / hop) × hidden_size`; returns the rows too.
    pub(super) fn forward(&self, wav: &[f32]) -> (Vec<f32>, usize) {
        let mut len = wav.len();
        let mut x = self.first.forward(wav, len, Pre::None);
        for stage in &self.stages {
            for block in &stage.blocks {
                x = block.forward(&x, len);
            }
            x = stage.down.forward(&x, len, Pre::Elu);
            len = stage.down.shape.output_len(len);
        }
        (self.last.forward(&x, len, Pre::Elu), len)
    }
}
