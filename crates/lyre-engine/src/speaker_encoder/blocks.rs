//! ECAPA-TDNN building blocks, after the official `TimeDelayNetBlock`, `Res2NetBlock`,
//! `SqueezeExcitationBlock` and `SqueezeExcitationRes2NetBlock` (no BatchNorm anywhere).

use super::conv::{Act, Conv1d, WeightSource};
use crate::error::{EngineError, Result};

/// `TimeDelayNetBlock`: a reflect-padded "same" Conv1d, then ReLU.
#[derive(Debug, Clone)]
pub struct Tdnn {
    pub conv: Conv1d,
}

impl Tdnn {
    pub fn load(
        w: &dyn WeightSource,
        prefix: &str,
        out: usize,
        inp: usize,
        kernel: usize,
        dilation: usize,
    ) -> Result<Self> {
        Ok(Tdnn { conv: Conv1d::load(w, &format!("{prefix}.conv"), out, inp, kernel, dilation)? })
    }

    pub fn forward(&self, x: &Act) -> Result<Act> {
        Ok(self.conv.forward(x)?.relu())
    }
}

/// `SqueezeExcitationBlock`: time mean → conv1 → ReLU → conv2 → sigmoid, scaling each channel.
#[derive(Debug, Clone)]
struct SqueezeExcitation {
    conv1: Conv1d,
    conv2: Conv1d,
}

impl SqueezeExcitation {
    fn forward(&self, mut x: Act) -> Act {
        let t = x.time as f32;
        let mean: Vec<f32> = (0..x.channels).map(|c| x.row(c).iter().sum::<f32>() / t).collect();
        let mut hidden = self.conv1.forward_vec(&mean);
        hidden.iter_mut().for_each(|v| *v = v.max(0.0));
        let gate = self.conv2.forward_vec(&hidden);
        for (row, g) in x.data.chunks_exact_mut(x.time).zip(gate) {
            let s = 1.0 / (1.0 + (-g).exp());
            row.iter_mut().for_each(|v| *v *= s);
        }
        x
    }
}

/// `SqueezeExcitationRes2NetBlock`: tdnn1 (k1) → Res2Net → tdnn2 (k1) → SE, plus the input.
#[derive(Debug, Clone)]
pub struct SeRes2NetBlock {
    tdnn1: Tdnn,
    /// `scale - 1` TDNNs over channel slices; slice 0 passes through.
    res2net: Vec<Tdnn>,
    scale: usize,
    tdnn2: Tdnn,
    se: SqueezeExcitation,
}

impl SeRes2NetBlock {
    #[allow(clippy::too_many_arguments)]
    pub fn load(
        w: &dyn WeightSource,
        prefix: &str,
        inp: usize,
        out: usize,
        kernel: usize,
        dilation: usize,
        scale: usize,
        se_channels: usize,
    ) -> Result<Self> {
        if scale == 0 || !out.is_multiple_of(scale) {
            return Err(EngineError::Config {
                path: w.path().to_path_buf(),
                field: "speaker_encoder_config.enc_res2net_scale".into(),
                message: format!("{out} channels do not split into {scale} equal Res2Net slices"),
            });
        }
        if inp != out {
            return Err(EngineError::Config {
                path: w.path().to_path_buf(),
                field: "speaker_encoder_config.enc_channels".into(),
                message: format!("an SE-Res2Net block needs equal widths for its residual ({inp} → {out})"),
            });
        }
        let slice = out / scale;
        let res2net = (0..scale - 1)
            .map(|j| {
                Tdnn::load(w, &format!("{prefix}.res2net_block.blocks.{j}"), slice, slice, kernel, dilation)
            })
            .collect::<Result<_>>()?;
        Ok(SeRes2NetBlock {
            tdnn1: Tdnn::load(w, &format!("{prefix}.tdnn1"), out, inp, 1, 1)?,
            res2net,
            scale,
            tdnn2: Tdnn::load(w, &format!("{prefix}.tdnn2"), out, out, 1, 1)?,
            se: SqueezeExcitation {
                conv1: Conv1d::load(w, &format!("{prefix}.se_block.conv1"), se_channels, out, 1, 1)?,
                conv2: Conv1d::load(w, &format!("{prefix}.se_block.conv2"), out, se_channels, 1, 1)?,
            },
        })
    }

    pub fn forward(&self, x: &Act) -> Result<Act> {
        let h = self.tdnn1.forward(x)?;
        let h = self.tdnn2.forward(&self.res2net(&h)?)?;
        let mut h = self.se.forward(h);
        for (o, r) in h.data.iter_mut().zip(&x.data) {
            *o += r;
        }
        Ok(h)
    }

    /// `Res2NetBlock.forward`: y0 = x0, y1 = f0(x1), yi = f(i-1)(xi + y(i-1)).
    fn res2net(&self, x: &Act) -> Result<Act> {
        let slice = x.channels / self.scale;
        let mut outputs: Vec<Act> = Vec::with_capacity(self.scale);
        for i in 0..self.scale {
            let mut part = x.slice_channels(i * slice, slice);
            let y = if i == 0 {
                part
            } else {
                if i > 1 {
                    for (p, prev) in part.data.iter_mut().zip(&outputs[i - 1].data) {
                        *p += prev;
                    }
                }
                self.res2net[i - 1].forward(&part)?
            };
            outputs.push(y);
        }
        Ok(Act::concat(&outputs.iter().collect::<Vec<_>>()))
    }
}
