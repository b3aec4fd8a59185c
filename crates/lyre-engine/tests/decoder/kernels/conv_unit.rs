//! A residual unit as one dispatch (`conv1d_unit.wgsl`) against a CPU loop: dilated conv k7 over
//! a ring, its SnakeBeta, the 1 × 1 conv, added to the stream, which is also stored through the
//! next SnakeBeta into the next ring; on the register tile that holds 128 channels and, where the
//! adapter has them, on the cooperative 64 × 128 tile. And the unit's choice between that
//! dispatch and its two convs.

use lyre_engine::gpu::{Dispatch, RowCounts};
use lyre_engine::kernels::conv::{
    pack_conv, Activation, Conv1d, FusedSnake, PackedConv, Residual, ResidualUnit,
};
use lyre_engine::kernels::gemm_tile::GemmTile;
use lyre_engine::kernels::select::KernelChoice;
use lyre_engine::kernels::seq_view::SeqView;
use lyre_engine::kernels::Env;
use lyre_engine::EngineTuning;

use super::conv::{dilated_conv_reference, SESSIONS};
use super::conv_snake::CpuSnake;
use super::*;

/// How a case builds the unit: the fused kernel with a tile, or the unit's own choice.
#[derive(Debug, Clone, Copy)]
enum Build {
    Fused(GemmTile),
    Unit,
}

/// The tiles whose columns hold up to 128 channels.
fn wide_tiles() -> Vec<GemmTile> {
    let mut tiles = vec![GemmTile::ROWS_128_WIDE, GemmTile::ROWS_128_WIDE.with_contiguous_loads()];
    if Gpu::new().coop_or_required() {
        tiles.push(GemmTile::COOP_WIDE);
        tiles.push(GemmTile::COOP_TALL);
    }
    tiles
}

/// A unit of `ch` channels over `rows` rows per session of `SESSIONS`, built by `build` in `env`:
/// returns the dispatches it ran and checks the stream and the next ring against the CPU.
fn unit_case(gpu: &Gpu, env: &Env, build: Build, ch: usize, rows: usize, seed: u64) -> Vec<Dispatch> {
    let mut rng = rng(seed);
    let (k, dil) = (7usize, 3usize);
    let history = ((k - 1) * dil) as u32;
    let w1 = randn(&mut rng, ch * ch * k, 0.3);
    let b1 = randn(&mut rng, ch, 0.5);
    let w2 = randn(&mut rng, ch * ch, 0.3);
    let b2 = randn(&mut rng, ch, 0.5);
    let (act, act_weights) = CpuSnake::random(gpu, &mut rng, ch);
    let (next, next_weights) = CpuSnake::random(gpu, &mut rng, ch);
    let signals: Vec<Signal> =
        SESSIONS.iter().map(|&(_, f)| Signal::random(&mut rng, (f as usize + 1) * rows, ch, 1.0)).collect();
    let ring = RingFill::new(gpu, 3, history + rows as u32 + 4, rows as u32, history, &SESSIONS, &signals);
    let (shape1, packed1) = pack_conv(&w1, ch, ch, k, dil);
    let (shape2, packed2) = pack_conv(&w2, ch, ch, 1, 1);
    let conv1 = PackedConv::upload(&gpu.ctx, "conv1", shape1, &packed1, Some(&b1)).unwrap();
    let conv2 = PackedConv::upload(&gpu.ctx, "conv2", shape2, &packed2, Some(&b2)).unwrap();
    let stride = shape1.in_stride();
    let n = SESSIONS.len() * rows;
    // The dilated conv's own output buffer: the fused kernel never writes it.
    let c = gpu.buf(&vec![7.0f32; n * stride as usize]);
    let stream = randn(&mut rng, n * stride as usize, 2.0);
    let y = gpu.buf(&stream);
    let empty: Vec<Signal> = (0..3).map(|_| Signal { channels: ch, rows: vec![] }).collect();
    let z = RingFill::new(gpu, 3, rows as u32 + 9, rows as u32, 0, &[], &empty);
    let sessions = gpu.sessions(&SESSIONS);
    let site = |label, conv, x, y| Conv1d {
        label,
        conv,
        x,
        y,
        rows_in: rows as u32,
        sessions: &sessions,
        activation: Activation::None,
        scale: None,
        residual: Residual::None,
        snake: FusedSnake::None,
    };
    let unit = ResidualUnit {
        label: "unit",
        dilated: Conv1d {
            snake: FusedSnake::Output(&act_weights),
            ..site("conv1", &conv1, ring.view(), SeqView::dense(&c, stride, rows as u32))
        },
        pointwise: Conv1d {
            residual: Residual::Accumulate,
            snake: FusedSnake::Copy(&next_weights, z.view()),
            ..site(
                "conv2",
                &conv2,
                SeqView::dense(&c, stride, rows as u32),
                SeqView::dense(&y, stride, rows as u32),
            )
        },
    };
    let dispatches = match build {
        Build::Fused(tile) => vec![unit.build_fused(env, tile).unwrap()],
        Build::Unit => unit.build(env).unwrap(),
    };
    gpu.run(SESSIONS.len(), &dispatches);

    let h: Vec<f32> = dilated_conv_reference(&w1, &b1, &signals, (ch, ch, k, dil), rows)
        .iter()
        .enumerate()
        .map(|(i, &v)| act.apply(v, i % ch))
        .collect();
    let mut want_y = Vec::with_capacity(n * ch);
    for r in 0..n {
        for o in 0..ch {
            let sum: f64 = (0..ch).map(|c| w2[o * ch + c] as f64 * h[r * ch + c] as f64).sum();
            want_y.push((stream[r * stride as usize + o] as f64 + b2[o] as f64 + sum) as f32);
        }
    }
    let want_z: Vec<f32> = want_y.iter().enumerate().map(|(i, &v)| next.apply(v, i % ch)).collect();
    let got_y = dense_rows(&gpu.read::<f32>(&y), SESSIONS.len(), rows, stride as usize, ch);
    let got_z = z.step_rows(gpu, &SESSIONS, rows, ch);
    // f16 operands in both GEMMs on cooperative matrices; f32 sums on the register tile.
    // (The Snake's slope reaches about 8 here, so the ring's error is a few times the stream's.)
    let coop = match build {
        Build::Fused(tile) => tile.coop,
        Build::Unit => env.kernels.conv_tile().coop,
    };
    let (tol_y, tol_z) = if coop { (5e-3, 2e-2) } else { (2e-5, 1e-4) };
    let what = format!("unit of {ch} channels, {rows} rows, {build:?}");
    assert_close(&format!("{what}: stream"), &got_y, &want_y, tol_y);
    assert_close(&format!("{what}: next ring"), &got_z, &want_z, tol_z);
    dispatches
}

#[test]
fn the_fused_unit_matches_its_two_convs_on_the_cpu() {
    let gpu = Gpu::new();
    for (i, tile) in wide_tiles().into_iter().enumerate() {
        let seed = 1100 + 10 * i as u64;
        // 96 channels (the 12 Hz codec's last block), 33 rows per session: row tiles straddle
        // sessions and the last is partly full.
        unit_case(&gpu, &gpu.env(), Build::Fused(tile), 96, 33, seed);
        // 70 channels: the last group of four half padding, a partial chunk of the 1 × 1 conv's
        // K and of the tile's columns.
        unit_case(&gpu, &gpu.env(), Build::Fused(tile), 70, 5, seed + 1);
        // 128 channels: every column of the tile.
        unit_case(&gpu, &gpu.env(), Build::Fused(tile), 128, 3, seed + 2);
    }
}

/// Labels of the dispatches a tick of `sessions` sessions records for `dispatches`.
fn selected(dispatches: &[Dispatch], sessions: u32) -> Vec<String> {
    let counts = RowCounts { talker_rows: 0, sessions };
    let mut labels = Vec::new();
    for d in dispatches {
        d.for_each_selected(&counts, &mut |d| labels.push(d.label.clone()));
    }
    labels
}

/// With the default tuning on an adapter whose conv tile holds 64 columns (no cooperative
/// matrices) the unit runs as two convs; with a 128-column tile and the GEMM from one row it runs
/// as one dispatch, and `conv_fuse_units = false` turns that off.
#[test]
fn the_unit_fuses_where_the_tile_holds_its_channels_and_the_key_allows() {
    let gpu = Gpu::new();
    let mut tuning = EngineTuning::default();
    for (key, value) in
        [("conv_gemm_min_rows", "1"), ("conv_gemm_min_tiles", "1"), ("conv_gemm_max_split", "1")]
    {
        tuning.set(key, value).unwrap();
    }
    tuning.set("conv_tile", "128x128").unwrap();
    let fusing = KernelChoice::new(&gpu.ctx, &tuning);
    tuning.set("conv_fuse_units", "false").unwrap();
    let apart = KernelChoice::new(&gpu.ctx, &tuning);
    let env = |kernels| Env { kernels, ..gpu.env() };

    let fused = unit_case(&gpu, &env(&fusing), Build::Unit, 96, 5, 1200);
    assert_eq!(selected(&fused, 3), ["unit"], "one dispatch");
    let two = unit_case(&gpu, &env(&apart), Build::Unit, 96, 5, 1201);
    assert_eq!(selected(&two, 3), ["conv1", "conv2"], "two convs with conv_fuse_units off");
    if !gpu.ctx.has_coop_f16() {
        let defaults = KernelChoice::new(&gpu.ctx, &EngineTuning::default());
        let default = unit_case(&gpu, &env(&defaults), Build::Unit, 96, 5, 1202);
        assert_eq!(selected(&default, 3), ["conv1", "conv2"], "a 64-column tile cannot hold 96 channels");
    }
}

/// A tile narrower than the unit's channels is refused by the unit's name.
#[test]
fn a_tile_narrower_than_the_channels_is_refused() {
    let gpu = Gpu::new();
    let ch = 96usize;
    let (shape, packed) = pack_conv(&vec![0.1; ch * ch * 7], ch, ch, 7, 3);
    let conv1 = PackedConv::upload(&gpu.ctx, "conv1", shape, &packed, Some(&vec![0.0; ch])).unwrap();
    let (shape2, packed2) = pack_conv(&vec![0.1; ch * ch], ch, ch, 1, 1);
    let conv2 = PackedConv::upload(&gpu.ctx, "conv2", shape2, &packed2, None).unwrap();
    let mut rng = rng(1300);
    let (_, act) = CpuSnake::random(&gpu, &mut rng, ch);
    let (x, y) = (gpu.buf(&vec![0f32; 40 * ch]), gpu.buf(&vec![0f32; 4 * ch]));
    let sessions = gpu.sessions(&[(0, 0)]);
    let site = |conv, x| Conv1d {
        label: "conv",
        conv,
        x,
        y: SeqView::dense(&y, ch as u32, 4),
        rows_in: 4,
        sessions: &sessions,
        activation: Activation::None,
        scale: None,
        residual: Residual::None,
        snake: FusedSnake::None,
    };
    let mut ring = SeqView::dense(&x, ch as u32, 4);
    ring.layout = lyre_engine::kernels::seq_view::SeqLayout::Ring { len: 40, rows_per_frame: 4 };
    let unit = ResidualUnit {
        label: "block3.unit0",
        dilated: Conv1d { snake: FusedSnake::Output(&act), ..site(&conv1, ring) },
        pointwise: Conv1d {
            residual: Residual::Accumulate,
            ..site(&conv2, SeqView::dense(&y, ch as u32, 4))
        },
    };
    let err = match unit.build_fused(&gpu.env(), GemmTile::ROWS_128) {
        Ok(_) => panic!("96 channels on a 64-column tile"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("`block3.unit0`") && err.contains("96 channels"), "{err}");
    let no_snake = ResidualUnit { dilated: site(&conv1, ring), ..unit };
    let err = no_snake.build_fused(&gpu.env(), GemmTile::ROWS_128_WIDE).err().map(|e| e.to_string());
    assert!(err.as_deref().is_some_and(|e| e.contains("SnakeBeta")), "{err:?}");
}
