//! The conv epilogue's fused SnakeBeta, against a CPU loop, on every kernel a site may run (the
//! direct kernel, every GEMM tile, K split or not): as the activation of a dilated conv over a
//! ring (a residual unit's conv k7 and its second Snake), and as a second store through the
//! Snake into a ring after a transposed conv accumulated into the stream (the ConvTranspose or
//! conv k1 and the first Snake of the next unit).

use lyre_engine::kernels::conv::SnakeWeights;
use lyre_engine::kernels::conv::{
    pack_conv, pack_conv_transpose, Activation, Conv1d, FusedSnake, PackedConv, Residual,
};
use lyre_engine::kernels::seq_view::SeqView;

use super::conv::{dilated_conv_reference, transposed_conv_reference, Kernel, SESSIONS};
use super::conv_gemm::tiles;
use super::*;

/// SnakeBeta in f64 from the checkpoint's log-space factors, the argument formed in f32 as the
/// GPU forms it.
pub(super) struct CpuSnake {
    alpha: Vec<f32>,
    inv_beta: Vec<f32>,
}

impl CpuSnake {
    pub(super) fn random(gpu: &Gpu, rng: &mut StdRng, channels: usize) -> (Self, SnakeWeights) {
        let log_alpha = randn(rng, channels, 1.0);
        let log_beta = randn(rng, channels, 1.0);
        let weights = SnakeWeights::upload(&gpu.ctx, "snake", &log_alpha, &log_beta).unwrap();
        let alpha = log_alpha.iter().map(|a| a.exp()).collect();
        let inv_beta = log_beta.iter().map(|b| 1.0 / (b.exp() + 1e-9)).collect();
        (CpuSnake { alpha, inv_beta }, weights)
    }

    pub(super) fn apply(&self, v: f32, c: usize) -> f32 {
        let arg = (self.alpha[c] * v) as f64;
        (v as f64 + self.inv_beta[c] as f64 * arg.sin().powi(2)) as f32
    }
}

/// The kernels a site may run: its own choice, and every GEMM tile unsplit and split in three.
fn kernels() -> Vec<Kernel> {
    let mut all = vec![Kernel::Site];
    for tile in tiles() {
        all.push(Kernel::Gemm(tile, 1));
        all.push(Kernel::Gemm(tile, 3));
    }
    all
}

/// A k7 conv with dilation 3 over a ring, `cin` → `cout`, its Snake as the activation:
/// `y = snake(bias + conv(x))`.
fn snake_activation_case(kernel: Kernel, cin: usize, cout: usize, rows: usize, seed: u64) {
    let gpu = Gpu::new();
    let mut rng = rng(seed);
    let (k, dil) = (7usize, 3usize);
    let history = ((k - 1) * dil) as u32;
    let w = randn(&mut rng, cout * cin * k, 0.5);
    let b = randn(&mut rng, cout, 0.5);
    let (snake, weights) = CpuSnake::random(&gpu, &mut rng, cout);
    let signals: Vec<Signal> =
        SESSIONS.iter().map(|&(_, f)| Signal::random(&mut rng, (f as usize + 1) * rows, cin, 1.0)).collect();
    let ring = RingFill::new(&gpu, 3, history + rows as u32 + 4, rows as u32, history, &SESSIONS, &signals);
    let (shape, packed) = pack_conv(&w, cout, cin, k, dil);
    let conv = PackedConv::upload(&gpu.ctx, "conv", shape, &packed, Some(&b)).unwrap();
    let y = gpu.buf(&vec![0f32; SESSIONS.len() * rows * cout]);
    let sessions = gpu.sessions(&SESSIONS);
    let site = Conv1d {
        label: "conv",
        conv: &conv,
        x: ring.view(),
        y: SeqView::dense(&y, cout as u32, rows as u32),
        rows_in: rows as u32,
        sessions: &sessions,
        activation: Activation::None,
        scale: None,
        residual: Residual::None,
        snake: FusedSnake::Output(&weights),
    };
    gpu.run(SESSIONS.len(), &kernel.build(site, &gpu));
    let conv = dilated_conv_reference(&w, &b, &signals, (cin, cout, k, dil), rows);
    let want: Vec<f32> = conv.iter().enumerate().map(|(i, &v)| snake.apply(v, i % cout)).collect();
    let what = format!("conv {cin}→{cout} + Snake, {rows} rows, {kernel:?}");
    assert_close(&what, &gpu.read::<f32>(&y), &want, kernel.tolerance(1e-5, &want));
}

/// A causal ConvTranspose of stride 4 accumulated into the stream `y`, which is also stored
/// through a Snake into a ring `z` at each session's slot: `y += convt(x)`, `z = snake(y)`.
fn snake_copy_case(kernel: Kernel, cin: usize, cout: usize, rows: usize, seed: u64) {
    let gpu = Gpu::new();
    let mut rng = rng(seed);
    let stride = 4usize;
    let k = 2 * stride;
    let w = randn(&mut rng, cin * cout * k, 0.5);
    let b = randn(&mut rng, cout, 0.5);
    let (snake, weights) = CpuSnake::random(&gpu, &mut rng, cout);
    let signals: Vec<Signal> =
        SESSIONS.iter().map(|&(_, f)| Signal::random(&mut rng, (f as usize + 1) * rows, cin, 1.0)).collect();
    let ring = RingFill::new(&gpu, 3, 1 + rows as u32 + 2, rows as u32, 1, &SESSIONS, &signals);
    let (shape, packed) = pack_conv_transpose(&w, cin, cout, k, stride).unwrap();
    let conv = PackedConv::upload(&gpu.ctx, "convt", shape, &packed, Some(&b)).unwrap();
    let out_rows = rows * stride;
    let stream = randn(&mut rng, SESSIONS.len() * out_rows * cout, 2.0);
    let y = gpu.buf(&stream);
    // The Snake's ring: 9 rows of history kept, every other element garbage (1e4).
    let empty: Vec<Signal> = (0..3).map(|_| Signal { channels: cout, rows: vec![] }).collect();
    let z = RingFill::new(&gpu, 3, out_rows as u32 + 9, out_rows as u32, 0, &[], &empty);
    let sessions = gpu.sessions(&SESSIONS);
    let site = Conv1d {
        label: "convt",
        conv: &conv,
        x: ring.view(),
        y: SeqView::dense(&y, cout as u32, out_rows as u32),
        rows_in: rows as u32,
        sessions: &sessions,
        activation: Activation::None,
        scale: None,
        residual: Residual::Accumulate,
        snake: FusedSnake::Copy(&weights, z.view()),
    };
    gpu.run(SESSIONS.len(), &kernel.build(site, &gpu));
    let convt = transposed_conv_reference(&w, &b, &signals, (cin, cout, k, stride), rows);
    let want_y: Vec<f32> = convt.iter().zip(&stream).map(|(&c, &s)| (c as f64 + s as f64) as f32).collect();
    let want_z: Vec<f32> = want_y.iter().enumerate().map(|(i, &v)| snake.apply(v, i % cout)).collect();
    let got_z = z.step_rows(&gpu, &SESSIONS, out_rows, cout);
    let what = format!("convt {cin}→{cout} accumulated, Snake copy, {rows} rows, {kernel:?}");
    let y_got = gpu.read::<f32>(&y);
    assert_close(&format!("{what}: stream"), &y_got, &want_y, kernel.tolerance(1e-5, &want_y));
    assert_close(&format!("{what}: ring"), &got_z, &want_z, kernel.tolerance(1e-5, &want_z));
}

#[test]
fn a_conv_applies_its_fused_snake_on_every_kernel() {
    for (i, kernel) in kernels().into_iter().enumerate() {
        let seed = 500 + 10 * i as u64;
        // 6 inputs: one partial chunk; 70 inputs and outputs: partial chunks and column tiles;
        // 33 rows per session: tiles that straddle sessions.
        snake_activation_case(kernel, 6, 5, 5, seed);
        snake_activation_case(kernel, 70, 70, 33, seed + 1);
    }
}

#[test]
fn a_conv_stores_the_stream_through_a_snake_into_the_next_ring_on_every_kernel() {
    for (i, kernel) in kernels().into_iter().enumerate() {
        let seed = 700 + 10 * i as u64;
        snake_copy_case(kernel, 5, 3, 3, seed);
        // 80 virtual columns (4 phases × 20) straddle column tiles of 64.
        snake_copy_case(kernel, 37, 20, 16, seed + 1);
    }
}

/// A Snake of the wrong width, or beside another activation, is refused by its site's name.
#[test]
fn a_fused_snake_that_does_not_fit_the_layer_is_refused() {
    let gpu = Gpu::new();
    let mut rng = rng(900);
    let (cin, cout, rows) = (8usize, 12usize, 2u32);
    let (shape, packed) = pack_conv(&randn(&mut rng, cout * cin, 1.0), cout, cin, 1, 1);
    let conv = PackedConv::upload(&gpu.ctx, "conv", shape, &packed, None).unwrap();
    let (_, narrow) = CpuSnake::random(&gpu, &mut rng, cout - 4);
    let (_, fitting) = CpuSnake::random(&gpu, &mut rng, cout);
    let x = gpu.buf(&vec![0f32; rows as usize * cin]);
    let y = gpu.buf(&vec![0f32; rows as usize * cout]);
    let sessions = gpu.sessions(&[(0, 0)]);
    let site = |snake, activation| Conv1d {
        label: "unit.conv1",
        conv: &conv,
        x: SeqView::dense(&x, cin as u32, rows),
        y: SeqView::dense(&y, cout as u32, rows),
        rows_in: rows,
        sessions: &sessions,
        activation,
        scale: None,
        residual: Residual::None,
        snake,
    };
    let refusal = |s: Conv1d| match s.build(&gpu.env()) {
        Ok(_) => panic!("built"),
        Err(e) => e.to_string(),
    };
    let e = refusal(site(FusedSnake::Output(&narrow), Activation::None));
    assert!(e.contains("`unit.conv1`") && e.contains("8 channels"), "{e}");
    let e = refusal(site(FusedSnake::Output(&fitting), Activation::Gelu));
    assert!(e.contains("`unit.conv1`") && e.contains("two activations"), "{e}");
    assert!(site(FusedSnake::Output(&fitting), Activation::None).build(&gpu.env()).is_ok());
}

/// The Snake's own sine (range reduction and polynomials, not the driver's `sin`) against f64
/// over arguments up to about ±50: an identity 1×1 conv whose activation is the Snake.
#[test]
fn the_fused_snake_matches_f64_sin_over_a_wide_range() {
    let gpu = Gpu::new();
    let mut rng = rng(31);
    let (ch, rows) = (4usize, 2000usize);
    let (snake, weights) = CpuSnake::random(&gpu, &mut rng, ch);
    let eye: Vec<f32> = (0..ch * ch).map(|i| if i % (ch + 1) == 0 { 1.0 } else { 0.0 }).collect();
    let x = randn(&mut rng, rows * ch, 20.0);
    let (shape, packed) = pack_conv(&eye, ch, ch, 1, 1);
    let conv = PackedConv::upload(&gpu.ctx, "identity", shape, &packed, None).unwrap();
    let (xb, y) = (gpu.buf(&x), gpu.buf(&vec![0f32; x.len()]));
    let sessions = gpu.sessions(&[(0, 0)]);
    let site = Conv1d {
        label: "identity",
        conv: &conv,
        x: SeqView::dense(&xb, ch as u32, rows as u32),
        y: SeqView::dense(&y, ch as u32, rows as u32),
        rows_in: rows as u32,
        sessions: &sessions,
        activation: Activation::None,
        scale: None,
        residual: Residual::None,
        snake: FusedSnake::Output(&weights),
    };
    gpu.run(1, &Kernel::Site.build(site, &gpu));
    let want: Vec<f32> = x.iter().enumerate().map(|(i, &v)| snake.apply(v, i % ch)).collect();
    assert_close("snake over ±20 inputs", &gpu.read::<f32>(&y), &want, 1e-6);
}
