//! The persistent decoder layer (`decode_layer.wgsl`: one dispatch, grid-wide barriers between
//! its phases) against the same layer as the stack's separate dispatches (each of which the
//! other kernel tests check against CPU loops), over several decode steps so that attention
//! reads the cache rows earlier steps wrote. Checks the residual stream after every step, the
//! whole KV cache, and that every barrier met all workgroups (none gave up).

use lyre_engine::gpu::{Dispatch, RowCount, RowCounts};
use lyre_engine::kernels::attention::Heads;
use lyre_engine::kernels::layer::{
    grid_is_resident, persistent_groups, sync_bytes, workgroup_bytes, GridSync, LayerWeights,
};
use lyre_engine::kernels::select::{grid_size, AttentionSplit};
use lyre_engine::model::rope::RopeTables;
use lyre_engine::model::transformer::{KvBuffers, StackBuffers, StackRun, StackShape};
use lyre_engine::KvFormat;

use crate::support::*;

const STEPS: u32 = 6;
const SLOT: u32 = 1;

/// Sizes in units of the subgroup, so that on any adapter the dot products take every step of
/// decode_layer_dot.wgsl: rows of hidden width (qkv, gate_up) are 8 · SG + 1 vec4s (the
/// eight-load step, then one more load on lane 0), the half rows of `down` 7 · SG + 1 (a step
/// of eight on lane 0, steps of four, two and one on the others), those of `o` 4 · SG (one step
/// of four); and a row pair past the last row.
fn shape(subgroup: u32) -> StackShape {
    let sg = subgroup as usize;
    StackShape {
        hidden: 64 * sg + 8,
        inter: 112 * sg + 16,
        layers: 2,
        // head_dim = 4 lanes' worth of dims: the split attend_head needs on any subgroup size.
        heads: Heads { n_heads: 16, n_kv_heads: 4, head_dim: 4 * subgroup },
        eps: 1e-6,
        rope_theta: 1e6,
    }
}

fn bf16_buffer(gpu: &Gpu, rng: &mut rand::rngs::StdRng, n: usize, scale: f32, offset: f32) -> wgpu::Buffer {
    let v: Vec<f32> = randn(rng, n, scale).iter().map(|x| x + offset).collect();
    gpu.buf(&bf16_round(&v).1)
}

fn layer_weights(gpu: &Gpu, s: &StackShape, seed: u64) -> Vec<LayerWeights> {
    let mut r = rng(seed);
    let (h, i) = (s.hidden, s.inter);
    let (q, qkv, hd) = (s.heads.q_width() as usize, s.heads.qkv_width() as usize, s.heads.head_dim as usize);
    let k_scale = |k: usize| 1.5 / (k as f32).sqrt();
    (0..s.layers)
        .map(|_| LayerWeights {
            input_norm: bf16_buffer(gpu, &mut r, h, 0.2, 1.0),
            qkv: bf16_buffer(gpu, &mut r, qkv * h, k_scale(h), 0.0),
            q_norm: bf16_buffer(gpu, &mut r, hd, 0.2, 1.0),
            k_norm: bf16_buffer(gpu, &mut r, hd, 0.2, 1.0),
            o: bf16_buffer(gpu, &mut r, h * q, k_scale(q), 0.0),
            post_norm: bf16_buffer(gpu, &mut r, h, 0.2, 1.0),
            gate_up: bf16_buffer(gpu, &mut r, 2 * i * h, k_scale(h), 0.0),
            down: bf16_buffer(gpu, &mut r, h * i, k_scale(i), 0.0),
        })
        .collect()
}

struct Run {
    /// The residual stream after each step.
    x: Vec<Vec<f32>>,
    k: Vec<f32>,
    v: Vec<f32>,
    /// Barrier arrivals and waits that gave up.
    sync: [u32; 4],
}

/// How the stack runs.
#[derive(Clone, Copy)]
enum Mode {
    Separate,
    /// Persistent layers of this many workgroups, splitting long heads' keys so.
    Grid(u32, AttentionSplit),
    /// Persistent layers waiting for two workgroups with one launched, after
    /// `Dispatch::leave_persistent` (`left`) or not.
    ShortGrid {
        left: bool,
    },
}

/// The two-layer stack's buffers (one row, cache slots 0 and 1) and its grid counter.
struct Stack {
    bufs: StackBuffers,
    kv: KvBuffers,
    rope: RopeTables,
    row_desc: wgpu::Buffer,
    counter: wgpu::Buffer,
}

impl Stack {
    fn new(gpu: &Gpu, s: &StackShape, positions: usize, format: KvFormat) -> Self {
        let ctx = &gpu.ctx;
        Stack {
            bufs: StackBuffers::new(ctx, "t", s, 2).unwrap(),
            kv: KvBuffers::new(ctx, "t.kv", s, 2, positions, format).unwrap(),
            rope: RopeTables::new(ctx, "t.rope", positions, s.heads.head_dim as usize, s.rope_theta).unwrap(),
            row_desc: gpu.buf(&[SLOT, 0, 0, 0]),
            counter: gpu.buf(&vec![0u32; sync_bytes(&[s.heads]) as usize / 4]),
        }
    }

    /// The grid over this stack's counter.
    fn grid(&self, groups: u32, held_back: u32, split: AttentionSplit) -> GridSync<'_> {
        GridSync { groups, counter: &self.counter, held_back, split }
    }

    /// The stack's dispatches at one row per session, persistent where `grid` is set.
    fn dispatches(
        &self,
        gpu: &Gpu,
        s: &StackShape,
        layers: &[LayerWeights],
        grid: Option<GridSync>,
    ) -> Vec<Dispatch> {
        StackRun {
            label: "t",
            shape: s,
            layers,
            bufs: &self.bufs,
            kv: &self.kv,
            rope: &self.rope,
            row_desc: &self.row_desc,
            rows: RowCount::Sessions,
            grid,
        }
        .build(&gpu.env())
        .unwrap()
    }
}

/// Runs `steps` decode steps of the two-layer stack at one row (cache slot `SLOT`, positions
/// 0, 1, ...).
fn run(gpu: &Gpu, s: &StackShape, layers: &[LayerWeights], mode: Mode, format: KvFormat, steps: u32) -> Run {
    let ctx = &gpu.ctx;
    let stack = Stack::new(gpu, s, steps as usize + 2, format);
    let grid = match mode {
        Mode::Separate => None,
        Mode::Grid(groups, split) => Some(stack.grid(groups, 0, split)),
        Mode::ShortGrid { .. } => Some(stack.grid(2, 1, AttentionSplit::default())),
    };
    let mut dispatches = stack.dispatches(gpu, s, layers, grid);
    let Stack { bufs, kv, row_desc, counter, .. } = &stack;
    let persistent = dispatches.iter().all(|d| d.label.ends_with(".layer"));
    assert_eq!(persistent, grid.is_some(), "{:?}", dispatches.iter().map(|d| &d.label).collect::<Vec<_>>());
    if let Mode::ShortGrid { left: true } = mode {
        assert!(dispatches.iter_mut().all(|d| d.leave_persistent()));
    }
    let mut r = rng(99);
    let mut x = Vec::new();
    for pos in 0..steps {
        ctx.queue.write_buffer(row_desc, 0, bytemuck::cast_slice(&[SLOT, pos, 0, 0]));
        ctx.queue.write_buffer(&bufs.x, 0, bytemuck::cast_slice(&randn(&mut r, s.hidden, 2.0)));
        gpu.run(RowCounts { talker_rows: 1, sessions: 1 }, &dispatches);
        x.push(gpu.read::<f32>(&bufs.x)[..s.hidden].to_vec());
    }
    let sync: Vec<u32> = gpu.read(counter);
    Run {
        x,
        k: read_kv(gpu, &kv.k[s.layers - 1], format),
        v: read_kv(gpu, &kv.v[s.layers - 1], format),
        sync: [sync[0], sync[1], sync[2], sync[3]],
    }
}

fn check(groups: u32) {
    check_with(groups, KvFormat::F32, AttentionSplit::default(), STEPS);
}

/// `groups` workgroups against the separate dispatches over `steps` steps, with the KV cache in
/// `format` and heads split so.
fn check_with(groups: u32, format: KvFormat, split: AttentionSplit, steps: u32) {
    let gpu = Gpu::new();
    let size = gpu.ctx.fixed_subgroup_size().expect("an adapter with subgroups of one size");
    let s = shape(size);
    let layers = layer_weights(&gpu, &s, 5);
    let want = run(&gpu, &s, &layers, Mode::Separate, format, steps);
    let got = run(&gpu, &s, &layers, Mode::Grid(groups, split), format, steps);
    // The two paths' f32 sums differ in the last bits, which can move a value across an f16
    // rounding boundary: one f16 step (~1e-3 at these magnitudes) in the cache, and what it
    // does to the next layer.
    let (x_tol, kv_tol) = match format {
        KvFormat::F32 => (2e-5, 1e-4),
        KvFormat::F16 => (2e-4, 4e-3),
    };
    for (step, (g, w)) in got.x.iter().zip(&want.x).enumerate() {
        let scale = w.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        assert_close(&format!("{groups} workgroups, x after step {step}"), g, w, x_tol * scale.max(1.0));
    }
    assert_close("K cache of layer 1", &got.k, &want.k, kv_tol);
    assert_close("V cache of layer 1", &got.v, &want.v, kv_tol);
    assert!(want.k.iter().any(|&v| v != 0.0), "the steps wrote no cache rows");
    assert_eq!(got.sync[1], 0, "{groups} workgroups: barrier waits gave up (grid not resident)");
    if groups > 1 {
        // Four barriers per layer, every workgroup arriving at each.
        assert_eq!(got.sync[0], steps * s.layers as u32 * 4 * groups);
    }
}

/// A grid that does not run all at once (here: one of its two workgroups never launched)
/// counts every barrier wait that gave up, which the engine reads to end the tick's sessions;
/// after `leave_persistent` the same dispatch list runs the separate dispatches.
#[test]
fn a_short_grid_gives_up_and_leaving_it_runs_separate_dispatches() {
    let gpu = Gpu::new();
    let size = gpu.ctx.fixed_subgroup_size().expect("an adapter with subgroups of one size");
    let s = shape(size);
    let layers = layer_weights(&gpu, &s, 5);
    let short = run(&gpu, &s, &layers, Mode::ShortGrid { left: false }, KvFormat::F32, STEPS);
    // Every barrier of the one workgroup: four per layer and step.
    // Four barriers per layer and step, one arrival each; barrier k waits for arrival
    // (k & !1) + 2, so every even-numbered one gives up (the odd ones find their pair's first).
    let barriers = STEPS * s.layers as u32 * 4;
    assert_eq!(short.sync[0], barriers, "arrivals");
    assert_eq!(short.sync[1], barriers / 2, "waits that gave up");
    let want = run(&gpu, &s, &layers, Mode::Separate, KvFormat::F32, STEPS);
    let left = run(&gpu, &s, &layers, Mode::ShortGrid { left: true }, KvFormat::F32, STEPS);
    assert_eq!(left.sync, [0; 4], "no persistent dispatch ran");
    assert_eq!(left.x, want.x, "the separate dispatches' residual stream");
    assert_eq!((left.k, left.v), (want.k, want.v));
}

/// Which dispatches a tick records (what `record` replays and per-dispatch profiles name): the
/// persistent layers at one row, their five-dispatch alternatives from two rows, and those at
/// one row too once the plan has left the grid.
#[test]
fn the_recorded_dispatches_follow_the_rows_and_leaving_the_grid() {
    let gpu = Gpu::new();
    let s = shape(gpu.ctx.fixed_subgroup_size().expect("an adapter with subgroups of one size"));
    let layers = layer_weights(&gpu, &s, 5);
    let stack = Stack::new(&gpu, &s, 4, KvFormat::F32);
    let mut dispatches =
        stack.dispatches(&gpu, &s, &layers, Some(stack.grid(1, 0, AttentionSplit::default())));
    let without_grid = stack.dispatches(&gpu, &s, &layers, None);
    let recorded = |dispatches: &[Dispatch], sessions: u32| {
        let counts = RowCounts { talker_rows: sessions, sessions };
        let mut labels = Vec::new();
        for d in dispatches {
            d.for_each_selected(&counts, &mut |one| labels.push(one.label.clone()));
        }
        labels
    };
    assert_eq!(recorded(&dispatches, 1), ["t.0.layer", "t.1.layer"]);
    assert_eq!(recorded(&dispatches, 2), recorded(&without_grid, 2));
    let separate = recorded(&without_grid, 1);
    assert!(separate.len() >= 10 && separate.iter().all(|l| !l.ends_with(".layer")), "{separate:?}");
    assert!(dispatches.iter().map(Dispatch::count_all).sum::<usize>() >= 2 + separate.len());
    // A per-dispatch profile sizes its timestamps by the most any tick records: the separate
    // dispatches here (the persistent layer excludes them), not every alternative added up.
    let most: usize = dispatches.iter().map(Dispatch::count_most_selected).sum();
    let all: usize = dispatches.iter().map(Dispatch::count_all).sum();
    assert!(most >= separate.len() && most >= recorded(&without_grid, 2).len(), "{most}");
    assert!(most < all, "{most} of {all}");
    for d in &mut dispatches {
        assert!(d.leave_persistent());
    }
    assert_eq!(recorded(&dispatches, 1), separate);
}

#[test]
fn one_workgroup_matches_separate_dispatches() {
    check(1);
}

/// With an f16 cache the persistent layer rounds the row's own key and value as the separate
/// dispatches read them back.
#[test]
fn one_workgroup_matches_separate_dispatches_with_an_f16_cache() {
    check_with(1, KvFormat::F16, AttentionSplit::default(), STEPS);
}

/// A head's keys split into up to four parts of at least three keys (positions 0–23: one part
/// up to position 4, four from 11), merged in the next phase; one workgroup attends every part
/// in turn, so the split and the merge run on any adapter.
#[test]
fn split_attention_matches_separate_dispatches() {
    check_with(1, KvFormat::F32, AttentionSplit { max_chunks: Some(4), chunk_keys: 3 }, 24);
}

/// Several workgroups meeting at grid barriers, on GPUs. On CPU adapters persistent layers
/// keep to one workgroup (`grid_size`: lavapipe's barriers with two gave up in about a third
/// of the runs), which this checks instead.
#[test]
fn two_workgroups_meet_at_grid_barriers() {
    let gpu = Gpu::new();
    if gpu.ctx.is_cpu() {
        assert_eq!(grid_size(true, true, Some(2)), 1);
    } else {
        check(2);
    }
}

#[test]
fn the_adapter_default_grid_matches_separate_dispatches() {
    let gpu = Gpu::new();
    let s = shape(gpu.ctx.fixed_subgroup_size().expect("an adapter with subgroups of one size"));
    match persistent_groups(&gpu.ctx, &gpu.kernels, workgroup_bytes(s.heads, s.hidden as u32, s.inter as u32))
    {
        0 => assert!(gpu.ctx.is_cpu(), "persistent layers are off on a GPU"),
        groups => {
            check(groups);
            // Heads split over the grid's workgroups (16 heads: 8 parts each on 128).
            check_with(groups, KvFormat::F32, AttentionSplit { max_chunks: None, chunk_keys: 3 }, 24);
        }
    }
}

/// The residency check behind `persistent_groups`: one workgroup always runs at once, 256 never
/// do on a CPU adapter, and on GPUs the default grid does with the real models' largest layer
/// memory (1.7B talker: inter 6144) while a grid of 16384 workgroups of 256 threads (far beyond
/// any GPU's resident capacity) does not.
#[test]
fn grid_residency_check_tells_resident_grids_apart() {
    let gpu = Gpu::new();
    let heads = Heads { n_heads: 16, n_kv_heads: 8, head_dim: 128 };
    let largest = workgroup_bytes(heads, 2048, 6144);
    assert!(grid_is_resident(&gpu.ctx, 1, largest).unwrap());
    if gpu.ctx.is_cpu() {
        // lavapipe runs a workgroup per CPU thread at most (its probe once said 64 were resident
        // here, fooled by llvmpipe's loop limit ending the wait early).
        assert!(!grid_is_resident(&gpu.ctx, 256, 16).unwrap(), "256 workgroups reported resident");
    } else {
        assert!(grid_is_resident(&gpu.ctx, 128, largest).unwrap(), "128 workgroups not resident at once");
        assert!(!grid_is_resident(&gpu.ctx, 1 << 14, 16).unwrap(), "16384 workgroups reported resident");
    }
}
