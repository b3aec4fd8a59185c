//! Causal conv1d, transposed conv1d and linear layers with f32 weights over sequence views, with
//! a fused epilogue (bias, GELU/SiLU or SnakeBeta, per-channel scale, residual, and a second
//! store of the result through a SnakeBeta).
//!
//! All three are one kernel: a transposed conv with stride `up` and kernel `taps * up` is a
//! conv over the input rows whose `up` output phases are extra output columns. The weights are
//! repacked on the CPU (see [`PackedConv`]) from the PyTorch layouts.

use bytemuck::{Pod, Zeroable};
use half::f16;

use crate::error::{EngineError, Result};
use crate::gpu::GpuContext;
use crate::kernels::conv::SnakeWeights;
use crate::kernels::seq_view::{GpuView, SeqView};
use crate::kernels::Env;

/// The geometry of one packed layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvShape {
    pub cin: u32,
    pub cout: u32,
    /// Input rows each output reads: the kernel size of a conv, `kernel / stride` of a
    /// transposed conv, 1 for a linear layer.
    pub taps: u32,
    /// Spacing of the taps in input rows.
    pub dilation: u32,
    /// Output rows per input row: the stride of a transposed conv, else 1.
    pub up: u32,
}

impl ConvShape {
    /// Input channels in groups of four (the input rows' stride must be `4 * cin4`).
    pub fn cin4(&self) -> u32 {
        self.cin.div_ceil(4)
    }

    /// Padded input row width.
    pub fn in_stride(&self) -> u32 {
        4 * self.cin4()
    }

    /// Virtual output columns: `up` phases × `cout`.
    pub fn cols(&self) -> u32 {
        self.up * self.cout
    }

    /// Input rows before the step's first that the layer reads.
    pub fn history(&self) -> u32 {
        (self.taps - 1) * self.dilation
    }
}

/// A layer's weights in the kernel's layout, `w[(m * cin4 + c4) * cols + v]` = four input
/// channels, zero-padded past `cin`; and its bias.
pub struct PackedConv {
    pub shape: ConvShape,
    /// The packed weights in f32, which the direct kernel and the register-tile GEMM read.
    pub weight: wgpu::Buffer,
    /// The same packed weights in f16 ([`packed_to_f16`]: four halves per vec4 slot, the same
    /// indexing), which the GEMM on cooperative matrices reads and stages without converting.
    /// Made at upload only where the adapter has cooperative f16 matrices
    /// ([`GpuContext::has_coop_f16`]), where it costs half as much GPU memory again as `weight`
    /// (202 MiB for the 12 Hz tokenizer's decoder, whose f32 weights take 404 MiB).
    pub weight_f16: Option<wgpu::Buffer>,
    pub bias: Option<wgpu::Buffer>,
}

impl PackedConv {
    /// Uploads packed weights (from [`pack_conv`], [`pack_conv_transpose`] or [`pack_linear`]).
    pub fn upload(
        ctx: &GpuContext,
        label: &str,
        shape: ConvShape,
        packed: &[f32],
        bias: Option<&[f32]>,
    ) -> Result<Self> {
        let expected = (shape.taps * shape.cin4() * shape.cols() * 4) as usize;
        if packed.len() != expected || bias.is_some_and(|b| b.len() != shape.cout as usize) {
            return Err(EngineError::Gpu(format!("`{label}`: packed weights do not match {shape:?}")));
        }
        let weight_f16 = if ctx.has_coop_f16() {
            Some(ctx.storage_from(&format!("{label}.weight_f16"), &packed_to_f16(packed))?)
        } else {
            None
        };
        Ok(PackedConv {
            shape,
            weight: ctx.storage_from(&format!("{label}.weight"), packed)?,
            weight_f16,
            bias: bias.map(|b| ctx.storage_from(&format!("{label}.bias"), b)).transpose()?,
        })
    }
}

/// Packed f32 weights as the cooperative-matrix GEMM stages them (`to_f16` in
/// `coop_tile.wgsl`): clamped to ±65504 (f16's largest finite value), then rounded to the
/// nearest f16, ties to even. Same layout: value `i` becomes value `i`.
pub fn packed_to_f16(packed: &[f32]) -> Vec<f16> {
    packed.iter().map(|&v| f16::from_f32(v.clamp(-F16_MAX, F16_MAX))).collect()
}

const F16_MAX: f32 = 65504.0;

/// Packs a PyTorch Conv1d weight `[cout][cin][k]` (dilation `dil`). Tap `m` is kernel index
/// `k - 1 - m`, which multiplies input row `t - m * dil`.
pub fn pack_conv(w: &[f32], cout: usize, cin: usize, k: usize, dil: usize) -> (ConvShape, Vec<f32>) {
    let shape = ConvShape { cin: cin as u32, cout: cout as u32, taps: k as u32, dilation: dil as u32, up: 1 };
    let packed = pack(&shape, |m, c, v| w[(v * cin + c) * k + (k - 1 - m)]);
    (shape, packed)
}

/// Packs a PyTorch ConvTranspose1d weight `[cin][cout][k]` with stride `stride` (`k` a multiple
/// of it), right-trimmed as the causal decoder does: output row `t * stride + j` is
/// `sum_m x[t - m] · w[.., j + m * stride]`.
pub fn pack_conv_transpose(
    w: &[f32],
    cin: usize,
    cout: usize,
    k: usize,
    stride: usize,
) -> Result<(ConvShape, Vec<f32>)> {
    if stride == 0 || !k.is_multiple_of(stride) {
        return Err(EngineError::Gpu(format!(
            "transposed conv kernel {k} is not a multiple of stride {stride}"
        )));
    }
    let shape = ConvShape {
        cin: cin as u32,
        cout: cout as u32,
        taps: (k / stride) as u32,
        dilation: 1,
        up: stride as u32,
    };
    let packed = pack(&shape, |m, c, v| {
        let (phase, o) = (v / cout, v % cout);
        w[(c * cout + o) * k + phase + m * stride]
    });
    Ok((shape, packed))
}

/// Packs a PyTorch Linear weight `[out][in]` (or a 1×1 Conv1d).
pub fn pack_linear(w: &[f32], out: usize, inp: usize) -> (ConvShape, Vec<f32>) {
    pack_conv(w, out, inp, 1, 1)
}

fn pack(shape: &ConvShape, weight: impl Fn(usize, usize, usize) -> f32) -> Vec<f32> {
    let (cin, cin4, cols) = (shape.cin as usize, shape.cin4() as usize, shape.cols() as usize);
    let mut out = vec![0f32; shape.taps as usize * cin4 * cols * 4];
    for m in 0..shape.taps as usize {
        for c in 0..cin {
            for v in 0..cols {
                out[((m * cin4 + c / 4) * cols + v) * 4 + c % 4] = weight(m, c, v);
            }
        }
    }
    out
}

/// The activation applied after the bias.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    None = 0,
    /// Exact (erf) GELU.
    Gelu = 1,
    Silu = 2,
}

/// A SnakeBeta fused into the epilogue, in place of the dispatch that would read the stored
/// result back to apply it.
#[derive(Clone, Copy)]
pub enum FusedSnake<'a> {
    None,
    /// Applied to the result after the bias, in place of an activation: `y = snake(result)`.
    Output(&'a SnakeWeights),
    /// The finished value (after residual and accumulation) is stored to `y`, and through the
    /// SnakeBeta to a second view too: `z = snake(y)` (the next layer's input, where `y` stays
    /// the residual stream).
    Copy(&'a SnakeWeights, SeqView<'a>),
}

/// What is added to the (scaled) result.
#[derive(Debug, Clone, Copy)]
pub enum Residual<'a> {
    None,
    /// `y += result`.
    Accumulate,
    /// `y = res + result`, `res` indexed like `y`.
    From(SeqView<'a>),
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(super) struct Params {
    x: GpuView,
    y: GpuView,
    r: GpuView,
    z: GpuView,
    cin4: u32,
    cols: u32,
    cout: u32,
    taps: u32,
    dil: u32,
    up: u32,
    rows_in: u32,
    /// Set per variant by its row tiling ([`Conv1d::grid`]).
    pub(super) y_rows: u32,
    flags: u32,
    pub(super) out_threads: u32,
    _pad: [u32; 2],
}

impl Params {
    /// These parameters (input, geometry) with `other`'s output views and epilogue flags.
    pub(super) fn with_output_of(self, other: &Params) -> Params {
        Params { y: other.y, r: other.r, z: other.z, flags: other.flags, ..self }
    }
}

/// Buffers a site binds from binding 3 on: weights, bias, scale, input, residual, output, the
/// fused SnakeBeta's two factors and its second output.
pub(super) const BOUND: usize = 9;

/// One conv / transposed conv / linear site.
pub struct Conv1d<'a> {
    pub label: &'a str,
    pub conv: &'a PackedConv,
    /// Input rows: stride `conv.shape.in_stride()`, with `conv.shape.history()` rows of
    /// history when that is not 0 (a ring).
    pub x: SeqView<'a>,
    /// Output rows (`rows_in * up` per session).
    pub y: SeqView<'a>,
    /// Input rows per session this step.
    pub rows_in: u32,
    pub sessions: &'a wgpu::Buffer,
    pub activation: Activation,
    /// Per-output-channel factor applied after the activation (LayerScale, ConvNeXt gamma).
    pub scale: Option<&'a wgpu::Buffer>,
    pub residual: Residual<'a>,
    pub snake: FusedSnake<'a>,
}

impl Conv1d<'_> {
    /// Checks the views and fills the parameters (but `y_rows` and `out_threads`, which the
    /// variants set) and the bound buffers from binding 3 on.
    pub(super) fn prepare<'b>(&'b self, env: &'b Env) -> Result<(Params, [&'b wgpu::Buffer; BOUND])> {
        let s = self.conv.shape;
        if self.x.stride != s.in_stride() {
            return Err(EngineError::Gpu(format!(
                "`{}`: input stride {} is not the padded width {}",
                self.label,
                self.x.stride,
                s.in_stride()
            )));
        }
        self.x.check(self.label, self.rows_in, s.history())?;
        self.y.check(self.label, self.rows_in * s.up, 0)?;
        if let Residual::From(r) = self.residual {
            r.check(self.label, self.rows_in * s.up, 0)?;
        }
        let snake = match self.snake {
            FusedSnake::None => None,
            FusedSnake::Output(w) | FusedSnake::Copy(w, _) => Some(w),
        };
        if let Some(w) = snake {
            if w.channels != s.cout {
                return Err(EngineError::Gpu(format!(
                    "`{}`: a SnakeBeta of {} channels after a layer of {}",
                    self.label, w.channels, s.cout
                )));
            }
        }
        if matches!(self.snake, FusedSnake::Output(_)) && self.activation != Activation::None {
            return Err(EngineError::Gpu(format!("`{}`: two activations", self.label)));
        }
        let copy = match self.snake {
            FusedSnake::Copy(_, z) => {
                z.check(self.label, self.rows_in * s.up, 0)?;
                Some(z)
            }
            _ => None,
        };
        let flags = self.conv.bias.is_some() as u32
            | (self.scale.is_some() as u32) << 1
            | (matches!(self.residual, Residual::Accumulate) as u32) << 2
            | (matches!(self.residual, Residual::From(_)) as u32) << 3
            | (self.activation as u32) << 4
            | (matches!(self.snake, FusedSnake::Output(_)) as u32) << 8
            | (copy.is_some() as u32) << 9;
        let residual = match self.residual {
            Residual::From(r) => Some(r),
            _ => None,
        };
        let params = Params {
            x: self.x.gpu(),
            y: self.y.gpu(),
            r: residual.map(|r| r.gpu()).unwrap_or_default(),
            z: copy.map(|z| z.gpu()).unwrap_or_default(),
            cin4: s.cin4(),
            cols: s.cols(),
            cout: s.cout,
            taps: s.taps,
            dil: s.dilation,
            up: s.up,
            rows_in: self.rows_in,
            y_rows: 0,
            flags,
            out_threads: 0,
            _pad: [0; 2],
        };
        let buffers = [
            &self.conv.weight,
            self.conv.bias.as_ref().unwrap_or(env.dummy),
            self.scale.unwrap_or(env.dummy),
            self.x.buffer,
            residual.map(|r| r.buffer).unwrap_or(env.dummy),
            self.y.buffer,
            snake.map(|w| &w.alpha).unwrap_or(env.dummy),
            snake.map(|w| &w.inv_beta).unwrap_or(env.dummy),
            copy.map(|z| z.buffer).unwrap_or(env.scratch),
        ];
        Ok((params, buffers))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_weights_clamp_then_round_to_nearest_even() {
        let cases: [(f32, f32); 10] = [
            (0.0, 0.0),
            (1.5, 1.5),
            // Past f16's largest finite value: clamped, never infinite.
            (65504.0, 65504.0),
            (70000.0, 65504.0),
            (-1.0e9, -65504.0),
            (f32::INFINITY, 65504.0),
            // Halfway between 1 and the next f16 (1 + 2^-10): to even (1); above halfway: up.
            (1.0 + 2f32.powi(-11), 1.0),
            (1.0 + 3.0 * 2f32.powi(-11), 1.0 + 2.0 * 2f32.powi(-10)),
            // f16 subnormals are kept (smallest 2^-24); half of the smallest ties to zero.
            (3.0 * 2f32.powi(-24), 3.0 * 2f32.powi(-24)),
            (2f32.powi(-25), 0.0),
        ];
        let (input, want): (Vec<f32>, Vec<f32>) = cases.into_iter().unzip();
        let got: Vec<f32> = packed_to_f16(&input).iter().map(|h| h.to_f32()).collect();
        assert_eq!(got, want);
        // 1.5 · 2^-24 lies halfway between the subnormals 2^-24 and 2^-23: to even (2^-23).
        assert_eq!(packed_to_f16(&[1.5 * 2f32.powi(-24)])[0].to_bits(), 2);
        assert_eq!(packed_to_f16(&[-0.0])[0].to_bits(), 0x8000);
    }

    #[test]
    fn f16_weights_keep_the_f32_layout_and_its_zero_padding() {
        // cin = 5: the second group of four holds one channel and three of padding.
        let (cout, cin, k) = (3, 5, 2);
        let w: Vec<f32> = (0..cout * cin * k).map(|i| 1.0 + i as f32 / 3.0).collect();
        let (shape, packed) = pack_conv(&w, cout, cin, k, 1);
        let half = packed_to_f16(&packed);
        assert_eq!(half.len(), packed.len());
        for m in 0..k {
            for c in 0..4 * shape.cin4() as usize {
                for v in 0..cout {
                    let i = ((m * shape.cin4() as usize + c / 4) * cout + v) * 4 + c % 4;
                    let want = if c < cin { w[(v * cin + c) * k + (k - 1 - m)] } else { 0.0 };
                    assert_eq!(half[i], f16::from_f32(want), "tap {m}, channel {c}, column {v}");
                    assert_eq!(packed[i], want);
                }
            }
        }
    }
}
