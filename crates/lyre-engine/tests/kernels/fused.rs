//! The matmul's fused input modes (`Input::RmsNormed`, `Input::SwiGlu`) in each of the three
//! kernels against the unfused CPU pipeline: RMSNorm then matmul, SwiGLU then matmul. Each case
//! also checks that the reference differs from a plain matmul of the raw rows by far more than
//! the tolerance, so a kernel that dropped the norm or the gate would fail.

use lyre_engine::gpu::{RowCount, RowCounts};
use lyre_engine::kernels::matmul::{Activation, Input, Matmul, Output};
use lyre_engine::kernels::select::MatmulKernel;
use lyre_engine::kernels::Rows;

use crate::support::*;

/// `y[r, j] = act(b[j] + Σ_i x[r, i] · w[j, i]) (+ prior)` in f64; `x` rows are `k` wide.
struct Reference<'a> {
    w: &'a [f32],
    bias: Option<&'a [f32]>,
    prior: Option<&'a [f32]>,
    silu: bool,
}

impl Reference<'_> {
    fn apply(&self, x: &[f64], rows: usize, k: usize, n: usize) -> Vec<f32> {
        let mut y = vec![0.0; rows * n];
        for r in 0..rows {
            for j in 0..n {
                let mut v: f64 = (0..k).map(|i| x[r * k + i] * self.w[j * k + i] as f64).sum();
                v += self.bias.map_or(0.0, |b| b[j] as f64);
                if self.silu {
                    v /= 1.0 + (-v).exp();
                }
                v += self.prior.map_or(0.0, |p| p[r * n + j] as f64);
                y[r * n + j] = v as f32;
            }
        }
        y
    }
}

/// Qwen3 RMSNorm of each `k`-wide row: `gamma · x · rsqrt(mean(x²) + eps)`.
fn cpu_rms_norm(x: &[f32], gamma: &[f32], rows: usize, k: usize, eps: f32) -> Vec<f64> {
    let mut out = vec![0.0; rows * k];
    for r in 0..rows {
        let row = &x[r * k..(r + 1) * k];
        let ms = row.iter().map(|&v| v as f64 * v as f64).sum::<f64>() / k as f64;
        let inv = 1.0 / (ms + eps as f64).sqrt();
        for i in 0..k {
            out[r * k + i] = gamma[i] as f64 * row[i] as f64 * inv;
        }
    }
    out
}

/// `silu(gate) · up` of rows laid out `[gate | up]`, `k` each.
fn cpu_swiglu(gu: &[f32], rows: usize, k: usize) -> Vec<f64> {
    let mut out = vec![0.0; rows * k];
    for r in 0..rows {
        for i in 0..k {
            let g = gu[r * 2 * k + i] as f64;
            out[r * k + i] = g / (1.0 + (-g).exp()) * gu[r * 2 * k + k + i] as f64;
        }
    }
    out
}

fn kernels(gpu: &Gpu) -> Vec<MatmulKernel> {
    let size =
        gpu.ctx.fixed_subgroup_size().expect("the adapter has subgroups of a fixed size (lavapipe: 8)");
    let mut kernels = vec![MatmulKernel::PerThread, MatmulKernel::Subgroup { size }];
    kernels.extend(matvec_kernels(size));
    kernels.extend(gemm_kernels());
    kernels.extend(few_rows_kernels());
    kernels.extend(coop_kernels(gpu));
    kernels
}

/// (rows, k, n): odd column counts, row counts across every kernel's row tiles (4, 8, 32).
fn shapes(kernel: MatmulKernel) -> &'static [(usize, usize, usize)] {
    if chunks_of_64(kernel) {
        &[(1, 64, 5), (33, 128, 70), (130, 192, 65)]
    } else if is_coop(kernel) {
        // Past one 128-row tile, K in several chunks.
        &[(1, 32, 5), (33, 64, 70), (130, 96, 65)]
    } else if matches!(kernel, MatmulKernel::Gemm { .. }) {
        &[(1, 32, 5), (33, 64, 70), (40, 96, 65)]
    } else if matches!(kernel, MatmulKernel::Matvec { .. }) {
        &[(1, 64, 70), (3, 136, 33), (5, 520, 9), (7, 1032, 20)]
    } else if matches!(kernel, MatmulKernel::FewRows { .. }) {
        &[(2, 64, 70), (9, 136, 33), (35, 520, 9)]
    } else {
        &[(1, 36, 70), (3, 100, 33), (7, 64, 65), (13, 260, 9)]
    }
}

/// The epilogues each fused mode is checked with: (bias, silu, accumulate).
const EPILOGUES: [(bool, bool, bool); 2] = [(false, false, false), (true, true, true)];

fn tolerance(want: &[f32]) -> f32 {
    2e-5 * want.iter().fold(1.0f32, |m, v| m.max(v.abs()))
}

/// The tolerance `kernel` is held to: [`tolerance`], or 100× it on cooperative matrices, whose
/// operands (the normed or gated input) are rounded to f16.
fn kernel_tolerance(kernel: MatmulKernel, want: &[f32]) -> f32 {
    tolerance(want) * if is_coop(kernel) { 100.0 } else { 1.0 }
}

#[allow(clippy::too_many_arguments)]
fn run_case(
    gpu: &Gpu,
    kernel: MatmulKernel,
    input: Input,
    x: &wgpu::Buffer,
    x_stride: usize,
    (rows, k, n): (usize, usize, usize),
    (wbuf, bbuf): (&wgpu::Buffer, &wgpu::Buffer),
    (bias, silu, accumulate): (bool, bool, bool),
    prior: &[f32],
) -> Vec<f32> {
    let ybuf = gpu.buf(prior);
    let d = Matmul {
        label: "fused",
        weight: wbuf,
        bias: bias.then_some(bbuf),
        k: k as u32,
        n: n as u32,
        x: Rows::dense(x, x_stride as u32),
        input,
        y: Rows::dense(&ybuf, n as u32),
        rows: RowCount::Talker,
        output: if accumulate { Output::Accumulate } else { Output::Overwrite },
        activation: if silu { Activation::Silu } else { Activation::None },
    }
    .build_sequence(&gpu.env(), kernel)
    .unwrap();
    gpu.run(RowCounts { talker_rows: rows as u32, sessions: 0 }, &d);
    gpu.read(&ybuf)
}

#[test]
fn rms_normed_matmul_matches_norm_then_matmul() {
    let gpu = Gpu::new();
    let mut rng = rng(11);
    for kernel in kernels(&gpu) {
        for (case, &(rows, k, n)) in shapes(kernel).iter().enumerate() {
            // A large eps on every other shape, where it changes the result, checks its use.
            let (eps, scale) = if case % 2 == 0 { (1e-6, 3.0) } else { (0.05, 0.3) };
            let x = randn(&mut rng, rows * k, scale);
            let (gamma, gbits) = bf16_round(&randn(&mut rng, k, 2.0));
            let (w, wbits) = bf16_round(&randn(&mut rng, n * k, 0.5));
            let (b, bbits) = bf16_round(&randn(&mut rng, n, 0.5));
            let prior = randn(&mut rng, rows * n, 1.0);
            let (xbuf, gbuf, wbuf, bbuf) = (gpu.buf(&x), gpu.buf(&gbits), gpu.buf(&wbits), gpu.buf(&bbits));
            let normed = cpu_rms_norm(&x, &gamma, rows, k, eps);
            for epi in EPILOGUES {
                let (bias, silu, acc) = epi;
                let r = Reference { w: &w, bias: bias.then_some(&b), prior: acc.then_some(&prior), silu };
                let want = r.apply(&normed, rows, k, n);
                let raw: Vec<f64> = x.iter().map(|&v| v as f64).collect();
                let what = format!("{kernel:?} rms-normed {rows}x{k}x{n} eps {eps} {epi:?}");
                let tol = tolerance(&want);
                let unnormed = max_abs_diff(&r.apply(&raw, rows, k, n), &want);
                assert!(unnormed > 50.0 * tol, "{what}: the case cannot tell a dropped norm ({unnormed:e})");
                let input = Input::RmsNormed { gamma: &gbuf, eps };
                let got = run_case(&gpu, kernel, input, &xbuf, k, (rows, k, n), (&wbuf, &bbuf), epi, &prior);
                assert_close(&what, &got, &want, kernel_tolerance(kernel, &want));
            }
        }
    }
}

#[test]
fn swiglu_matmul_matches_swiglu_then_matmul() {
    let gpu = Gpu::new();
    let mut rng = rng(12);
    for kernel in kernels(&gpu) {
        for &(rows, k, n) in shapes(kernel) {
            let gu = randn(&mut rng, rows * 2 * k, 4.0);
            let (w, wbits) = bf16_round(&randn(&mut rng, n * k, 0.5));
            let (b, bbits) = bf16_round(&randn(&mut rng, n, 0.5));
            let prior = randn(&mut rng, rows * n, 1.0);
            let (xbuf, wbuf, bbuf) = (gpu.buf(&gu), gpu.buf(&wbits), gpu.buf(&bbits));
            let act = cpu_swiglu(&gu, rows, k);
            // What a kernel that ignored the gate (read only `gate`, or only `up`) would compute.
            let gates: Vec<f64> = (0..rows * k).map(|i| gu[(i / k) * 2 * k + i % k] as f64).collect();
            let ups: Vec<f64> = (0..rows * k).map(|i| gu[(i / k) * 2 * k + k + i % k] as f64).collect();
            for epi in EPILOGUES {
                let (bias, silu, acc) = epi;
                let r = Reference { w: &w, bias: bias.then_some(&b), prior: acc.then_some(&prior), silu };
                let want = r.apply(&act, rows, k, n);
                let what = format!("{kernel:?} swiglu {rows}x{k}x{n} {epi:?}");
                let tol = tolerance(&want);
                for wrong in [&gates, &ups] {
                    let d = max_abs_diff(&r.apply(wrong, rows, k, n), &want);
                    assert!(d > 50.0 * tol, "{what}: the case cannot tell a dropped gate ({d:e})");
                }
                let got = run_case(
                    &gpu,
                    kernel,
                    Input::SwiGlu,
                    &xbuf,
                    2 * k,
                    (rows, k, n),
                    (&wbuf, &bbuf),
                    epi,
                    &prior,
                );
                assert_close(&what, &got, &want, kernel_tolerance(kernel, &want));
            }
        }
    }
}

#[test]
fn fused_inputs_reject_bad_shapes() {
    let gpu = Gpu::new();
    let (x, w, y) = (gpu.buf(&[0f32; 64]), gpu.buf(&[0u16; 64]), gpu.buf(&[0f32; 64]));
    let short_gamma = gpu.buf(&[0u16; 4]);
    let mm = |input, stride| Matmul {
        label: "bad",
        weight: &w,
        bias: None,
        k: 8,
        n: 4,
        x: Rows::dense(&x, stride),
        input,
        y: Rows::dense(&y, 4),
        rows: RowCount::Talker,
        output: Output::Overwrite,
        activation: Activation::None,
    };
    assert!(mm(Input::SwiGlu, 8).build_with(&gpu.env(), MatmulKernel::PerThread).is_err());
    assert!(mm(Input::SwiGlu, 16).build_with(&gpu.env(), MatmulKernel::PerThread).is_ok());
    let normed = Input::RmsNormed { gamma: &short_gamma, eps: 1e-6 };
    assert!(mm(normed, 8).build_with(&gpu.env(), MatmulKernel::PerThread).is_err());
}
