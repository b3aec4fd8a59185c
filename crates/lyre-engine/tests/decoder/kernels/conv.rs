use lyre_engine::kernels::conv::DepthwiseConv;
use lyre_engine::kernels::conv::{
    pack_conv, pack_conv_transpose, pack_linear, Activation, Conv1d, FusedSnake, PackedConv, Residual,
};
use lyre_engine::kernels::gemm_tile::GemmTile;
use lyre_engine::kernels::seq_view::SeqView;

use super::*;

/// Which conv1d kernel a case runs: the site's own choice (the direct kernel, or the GEMM one
/// where the tuning's `conv_gemm_*` keys ask for it, or the narrow one for a few columns where
/// `conv_narrow` does), the GEMM kernel with a given tile and K split whatever the row count,
/// or the narrow kernel whatever the tuning.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kernel {
    Site,
    Gemm(GemmTile, u32),
    /// The narrow kernel, whatever the tuning.
    Narrow,
}

impl Kernel {
    pub(super) fn build(self, conv: Conv1d, gpu: &Gpu) -> Vec<Dispatch> {
        match self {
            Kernel::Site => conv.build(&gpu.env()).map(|d| vec![d]),
            Kernel::Gemm(tile, split) => conv.build_gemm(&gpu.env(), tile, split),
            Kernel::Narrow => conv.build_narrow(&gpu.env()).map(|d| vec![d]),
        }
        .unwrap()
    }

    /// The tolerance of a case: `base`, or on cooperative matrices (f16 operands) 2e-3 of the
    /// largest output.
    pub(super) fn tolerance(self, base: f32, want: &[f32]) -> f32 {
        match self {
            Kernel::Gemm(tile, _) if tile.coop => 2e-3 * want.iter().fold(1.0f32, |m, v| m.max(v.abs())),
            _ => base,
        }
    }
}

/// Sessions as `(slot, frame)`: slots out of order, one at frame 0 (all history is padding).
pub(super) const SESSIONS: [(u32, u32); 3] = [(2, 3), (0, 0), (1, 5)];

#[test]
fn dilated_causal_conv_reads_history_from_the_ring() {
    // 6 inputs: one K slice; 70 inputs (18 groups of 4): split in two uneven K slices.
    dilated_conv_case(Kernel::Site, 6, 5, 5, 11);
    dilated_conv_case(Kernel::Site, 70, 5, 5, 17);
}

/// A k7 conv with dilation 3 over the ring of `SESSIONS`, `rows` rows per session.
pub(super) fn dilated_conv_case(kernel: Kernel, cin: usize, cout: usize, rows: usize, seed: u64) {
    let gpu = Gpu::new();
    let mut rng = rng(seed);
    let (k, dil) = (7usize, 3usize);
    let history = ((k - 1) * dil) as u32;
    let w = randn(&mut rng, cout * cin * k, 0.5);
    let b = randn(&mut rng, cout, 0.5);
    let signals: Vec<Signal> =
        SESSIONS.iter().map(|&(_, f)| Signal::random(&mut rng, (f as usize + 1) * rows, cin, 1.0)).collect();
    let ring = RingFill::new(&gpu, 3, history + rows as u32 + 4, rows as u32, history, &SESSIONS, &signals);
    let (shape, packed) = pack_conv(&w, cout, cin, k, dil);
    let conv = PackedConv::upload(&gpu.ctx, "conv", shape, &packed, Some(&b)).unwrap();
    let y = gpu.buf(&vec![0f32; SESSIONS.len() * rows * cout]);
    let sessions = gpu.sessions(&SESSIONS);
    let d = kernel.build(
        Conv1d {
            label: "conv",
            conv: &conv,
            x: ring.view(),
            y: SeqView::dense(&y, cout as u32, rows as u32),
            rows_in: rows as u32,
            sessions: &sessions,
            activation: Activation::None,
            scale: None,
            residual: Residual::None,
            snake: FusedSnake::None,
        },
        &gpu,
    );
    gpu.run(SESSIONS.len(), &d);
    let want = dilated_conv_reference(&w, &b, &signals, (cin, cout, k, dil), rows);
    let what = format!("dilated conv {cin}→{cout}, {rows} rows, {kernel:?}");
    assert_close(&what, &gpu.read::<f32>(&y), &want, kernel.tolerance(1e-5, &want));
}

#[test]
fn transposed_conv_overlaps_the_previous_input_row() {
    transposed_conv_case(Kernel::Site, 5, 3, 4, 3, 12);
}

/// A causal ConvTranspose1d of kernel `2 * stride` over the ring of `SESSIONS`.
pub(super) fn transposed_conv_case(
    kernel: Kernel,
    cin: usize,
    cout: usize,
    stride: usize,
    rows: usize,
    seed: u64,
) {
    let gpu = Gpu::new();
    let mut rng = rng(seed);
    let k = 2 * stride;
    let w = randn(&mut rng, cin * cout * k, 0.5);
    let b = randn(&mut rng, cout, 0.5);
    let signals: Vec<Signal> =
        SESSIONS.iter().map(|&(_, f)| Signal::random(&mut rng, (f as usize + 1) * rows, cin, 1.0)).collect();
    let ring = RingFill::new(&gpu, 3, 1 + rows as u32 + 2, rows as u32, 1, &SESSIONS, &signals);
    let (shape, packed) = pack_conv_transpose(&w, cin, cout, k, stride).unwrap();
    let conv = PackedConv::upload(&gpu.ctx, "convt", shape, &packed, Some(&b)).unwrap();
    let out_rows = rows * stride;
    let y = gpu.buf(&vec![0f32; SESSIONS.len() * out_rows * cout]);
    let sessions = gpu.sessions(&SESSIONS);
    let d = kernel.build(
        Conv1d {
            label: "convt",
            conv: &conv,
            x: ring.view(),
            y: SeqView::dense(&y, cout as u32, out_rows as u32),
            rows_in: rows as u32,
            sessions: &sessions,
            activation: Activation::None,
            scale: None,
            residual: Residual::None,
            snake: FusedSnake::None,
        },
        &gpu,
    );
    gpu.run(SESSIONS.len(), &d);
    let want = transposed_conv_reference(&w, &b, &signals, (cin, cout, k, stride), rows);
    let what = format!("transposed conv {cin}→{cout}, stride {stride}, {kernel:?}");
    assert_close(&what, &gpu.read::<f32>(&y), &want, kernel.tolerance(1e-5, &want));
}

/// A Conv1d `[cout][cin][k]` with dilation `dil` over each session's `rows` rows of this step
/// (`SESSIONS`' frames), on the CPU: `[session][row][cout]`.
pub(super) fn dilated_conv_reference(
    w: &[f32],
    b: &[f32],
    signals: &[Signal],
    (cin, cout, k, dil): (usize, usize, usize, usize),
    rows: usize,
) -> Vec<f32> {
    let mut want = Vec::new();
    for (&(_, frame), sig) in SESSIONS.iter().zip(signals) {
        for t in 0..rows {
            let abs = (frame as usize * rows + t) as i64;
            for o in 0..cout {
                let mut acc = b[o] as f64;
                for c in 0..cin {
                    for i in 0..k {
                        let back = ((k - 1 - i) * dil) as i64;
                        acc += (w[(o * cin + c) * k + i] * sig.at(abs - back, c)) as f64;
                    }
                }
                want.push(acc as f32);
            }
        }
    }
    want
}

/// A ConvTranspose1d `[cin][cout][k]` with `stride` over the whole signal (PyTorch's
/// definition), trimmed on the right: each session's `rows * stride` output rows of this step,
/// `[session][row][cout]`.
pub(super) fn transposed_conv_reference(
    w: &[f32],
    b: &[f32],
    signals: &[Signal],
    (cin, cout, k, stride): (usize, usize, usize, usize),
    rows: usize,
) -> Vec<f32> {
    let out_rows = rows * stride;
    let mut want = Vec::new();
    for (&(_, frame), sig) in SESSIONS.iter().zip(signals) {
        for n in frame as usize * out_rows..(frame as usize + 1) * out_rows {
            for o in 0..cout {
                let mut acc = b[o] as f64;
                for t in 0..sig.rows.len() {
                    for j in 0..k {
                        if t * stride + j == n {
                            for c in 0..cin {
                                acc += (sig.rows[t][c] * w[(c * cout + o) * k + j]) as f64;
                            }
                        }
                    }
                }
                want.push(acc as f32);
            }
        }
    }
    want
}

/// erf in f64 by its Maclaurin series (accurate to ~1e-9 for |z| < 4.5); ±1 beyond.
fn erf(z: f64) -> f64 {
    if z.abs() > 4.5 {
        return z.signum();
    }
    let (mut term, mut sum) = (z, z);
    for n in 1..200 {
        term *= -z * z / n as f64;
        sum += term / (2 * n + 1) as f64;
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

fn activate(v: f64, act: Activation) -> f64 {
    match act {
        Activation::None => v,
        Activation::Gelu => 0.5 * v * (1.0 + erf(v / std::f64::consts::SQRT_2)),
        Activation::Silu => v / (1.0 + (-v).exp()),
    }
}

/// A linear layer over `sessions` sessions of `rows` rows, with activation, scale and a
/// residual read from another buffer (or accumulated into the output).
#[allow(clippy::too_many_arguments)]
pub(super) fn linear_case(
    kernel: Kernel,
    cin: usize,
    cout: usize,
    sessions_n: usize,
    rows: usize,
    act: Activation,
    accumulate: bool,
    seed: u64,
) {
    let gpu = Gpu::new();
    let mut rng = rng(seed);
    let w = randn(&mut rng, cout * cin, 0.6);
    let b = randn(&mut rng, cout, 1.0);
    let scale = randn(&mut rng, cout, 1.0);
    let n = sessions_n * rows;
    let x = randn(&mut rng, n * cin, 3.0);
    let res = randn(&mut rng, n * cout, 1.0);
    let (shape, packed) = pack_linear(&w, cout, cin);
    let conv = PackedConv::upload(&gpu.ctx, "linear", shape, &packed, Some(&b)).unwrap();
    let (xb, sb, rb) = (gpu.buf(&x), gpu.buf(&scale), gpu.buf(&res));
    let y = gpu.buf(&if accumulate { res.clone() } else { vec![0f32; n * cout] });
    let descs: Vec<(u32, u32)> = (0..sessions_n as u32).map(|s| (s, 7 * s)).collect();
    let sessions = gpu.sessions(&descs);
    let residual = if accumulate {
        Residual::Accumulate
    } else {
        Residual::From(SeqView::dense(&rb, cout as u32, rows as u32))
    };
    let d = kernel.build(
        Conv1d {
            label: "linear",
            conv: &conv,
            x: SeqView::dense(&xb, cin as u32, rows as u32),
            y: SeqView::dense(&y, cout as u32, rows as u32),
            rows_in: rows as u32,
            sessions: &sessions,
            activation: act,
            scale: Some(&sb),
            residual,
            snake: FusedSnake::None,
        },
        &gpu,
    );
    gpu.run(sessions_n, &d);
    let want: Vec<f32> = (0..n * cout)
        .map(|i| {
            let (r, o) = (i / cout, i % cout);
            let dot: f64 = (0..cin).map(|c| (w[o * cin + c] * x[r * cin + c]) as f64).sum();
            (activate(dot + b[o] as f64, act) * scale[o] as f64 + res[i] as f64) as f32
        })
        .collect();
    let what = format!(
        "linear {cin}→{cout}, {sessions_n}×{rows} rows, {act:?}, accumulate {accumulate}, {kernel:?}"
    );
    assert_close(&what, &gpu.read::<f32>(&y), &want, kernel.tolerance(2e-6, &want));
}

#[test]
fn linear_with_gelu_scale_and_residual_over_sessions_and_rows() {
    // 70 outputs: two column groups, the second mostly idle.
    linear_case(Kernel::Site, 12, 70, 5, 1, Activation::Gelu, false, 13);
    linear_case(Kernel::Site, 12, 70, 3, 7, Activation::Silu, true, 14);
    linear_case(Kernel::Site, 12, 70, 2, 2, Activation::None, false, 15);
    // 75 groups of 4 inputs: eight K slices of 10 (the last of 5).
    linear_case(Kernel::Site, 300, 70, 3, 2, Activation::Gelu, false, 18);
    linear_case(Kernel::Site, 300, 70, 1, 9, Activation::None, true, 19);
    // One row, 275 groups of 4 inputs: sixteen K slices (a workgroup of 1024 threads) for one
    // session, eight for three (the site's alternative for ticks of several sessions).
    linear_case(Kernel::Site, 1100, 70, 1, 1, Activation::Gelu, false, 22);
    linear_case(Kernel::Site, 1100, 70, 3, 1, Activation::None, true, 23);
    // 256 outputs: four full column groups, with and without K slices.
    linear_case(Kernel::Site, 300, 256, 2, 5, Activation::Gelu, false, 20);
    linear_case(Kernel::Site, 8, 256, 3, 1, Activation::None, true, 21);
}

#[test]
fn depthwise_conv_reads_history_from_the_ring() {
    let gpu = Gpu::new();
    let mut rng = rng(16);
    let (ch, k, dil, rows) = (70usize, 7usize, 2usize, 6usize);
    let history = ((k - 1) * dil) as u32;
    let w = randn(&mut rng, ch * k, 0.5);
    let b = randn(&mut rng, ch, 0.5);
    let signals: Vec<Signal> =
        SESSIONS.iter().map(|&(_, f)| Signal::random(&mut rng, (f as usize + 1) * rows, ch, 1.0)).collect();
    let ring = RingFill::new(&gpu, 3, history + rows as u32 + 1, rows as u32, history, &SESSIONS, &signals);
    let (wb, bb) = (gpu.buf(&w), gpu.buf(&b));
    let y = gpu.buf(&vec![0f32; SESSIONS.len() * rows * ch]);
    let sessions = gpu.sessions(&SESSIONS);
    let d = DepthwiseConv {
        label: "dw",
        weight: &wb,
        bias: Some(&bb),
        channels: ch as u32,
        taps: k as u32,
        dilation: dil as u32,
        x: ring.view(),
        y: SeqView::dense(&y, ch as u32, rows as u32),
        rows: rows as u32,
        sessions: &sessions,
    }
    .build(&gpu.env())
    .unwrap();
    gpu.run(SESSIONS.len(), &[d]);
    let mut want = Vec::new();
    for (&(_, frame), sig) in SESSIONS.iter().zip(&signals) {
        for t in 0..rows {
            let abs = (frame as usize * rows + t) as i64;
            for c in 0..ch {
                let acc: f64 =
                    (0..k).map(|i| (w[c * k + i] * sig.at(abs - ((k - 1 - i) * dil) as i64, c)) as f64).sum();
                want.push((acc + b[c] as f64) as f32);
            }
        }
    }
    assert_close("depthwise conv", &gpu.read::<f32>(&y), &want, 1e-5);
}

#[test]
fn gelu_matches_erf_over_its_range() {
    let gpu = Gpu::new();
    let rows = 1601usize;
    // Identity weights: the output is GELU of the input, swept over [-8, 8] in each channel.
    let eye: Vec<f32> = (0..16).map(|i| if i % 5 == 0 { 1.0 } else { 0.0 }).collect();
    let x: Vec<f32> = (0..rows * 4).map(|i| -8.0 + 16.0 * i as f32 / (rows * 4 - 1) as f32).collect();
    let (shape, packed) = pack_linear(&eye, 4, 4);
    let conv = PackedConv::upload(&gpu.ctx, "gelu", shape, &packed, None).unwrap();
    let xb = gpu.buf(&x);
    let y = gpu.buf(&vec![0f32; x.len()]);
    let sessions = gpu.sessions(&[(0, 0)]);
    let d = Conv1d {
        label: "gelu",
        conv: &conv,
        x: SeqView::dense(&xb, 4, rows as u32),
        y: SeqView::dense(&y, 4, rows as u32),
        rows_in: rows as u32,
        sessions: &sessions,
        activation: Activation::Gelu,
        scale: None,
        residual: Residual::None,
        snake: FusedSnake::None,
    }
    .build(&gpu.env())
    .unwrap();
    gpu.run(1, &[d]);
    let want: Vec<f32> = x.iter().map(|&v| activate(v as f64, Activation::Gelu) as f32).collect();
    assert_close("gelu over [-8, 8]", &gpu.read::<f32>(&y), &want, 2e-7);
}
