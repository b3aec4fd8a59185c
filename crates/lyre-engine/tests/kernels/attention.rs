use lyre_engine::gpu::{RowCount, RowCounts};
use lyre_engine::kernels::attention::{Attention, Heads, KvCache, QkNormRope, RowLayout};
use lyre_engine::kernels::select::{AttentionKernel, RopeKernel};
use lyre_engine::KvFormat;

use crate::support::*;

struct Case {
    heads: Heads,
    max_pos: usize,
    window: u32,
    /// (slot, pos) per row, all written this tick.
    rows: Vec<(u32, u32)>,
}

pub fn rope_tables(max_pos: usize, hd: usize, theta: f64) -> (Vec<f32>, Vec<f32>) {
    let half = hd / 2;
    let mut c = vec![0f32; max_pos * half];
    let mut s = vec![0f32; max_pos * half];
    for p in 0..max_pos {
        for i in 0..half {
            let inv = 1.0 / theta.powf(2.0 * i as f64 / hd as f64);
            let a = p as f64 * inv;
            c[p * half + i] = a.cos() as f32;
            s[p * half + i] = a.sin() as f32;
        }
    }
    (c, s)
}

pub fn cpu_norm_rope(v: &[f32], w: Option<&[f32]>, pos: usize, c: &[f32], s: &[f32]) -> Vec<f32> {
    let hd = v.len();
    let half = hd / 2;
    let mut x = v.to_vec();
    if let Some(w) = w {
        let ms = x.iter().map(|a| a * a).sum::<f32>() / hd as f32;
        let inv = 1.0 / (ms + 1e-6).sqrt();
        for i in 0..hd {
            x[i] = w[i] * x[i] * inv;
        }
    }
    let mut y = x.clone();
    for i in 0..half {
        let (cc, ss) = (c[pos * half + i], s[pos * half + i]);
        y[i] = x[i] * cc - x[i + half] * ss;
        y[i + half] = x[i + half] * cc + x[i] * ss;
    }
    y
}

/// Runs `case` with the per-thread kernel and, where the head fits the adapter's subgroups,
/// the subgroup kernel, with an f32 and an f16 cache.
fn run_case(case: &Case, seed: u64) {
    let gpu = Gpu::new();
    for format in [KvFormat::F32, KvFormat::F16] {
        run_case_with(&gpu, case, seed, RopeKernel::PerHead, AttentionKernel::PerThread, format);
        let size = gpu.ctx.fixed_subgroup_size().expect("the test adapter has fixed-size subgroups");
        let hd = case.heads.head_dim;
        if AttentionKernel::fits(size, hd) {
            let kernel = AttentionKernel::Subgroup { size };
            run_case_with(&gpu, case, seed, RopeKernel::PerHead, kernel, format);
        }
        if RopeKernel::fits(size, hd) {
            let rope = RopeKernel::Subgroup { size };
            run_case_with(&gpu, case, seed, rope, AttentionKernel::PerThread, format);
        }
    }
}

fn run_case_with(
    gpu: &Gpu,
    case: &Case,
    seed: u64,
    rope_kernel: RopeKernel,
    kernel: AttentionKernel,
    format: KvFormat,
) {
    let mut rng = rng(seed);
    let h = case.heads;
    let (nh, nkv, hd) = (h.n_heads as usize, h.n_kv_heads as usize, h.head_dim as usize);
    let n = case.rows.len();
    let width = h.qkv_width() as usize;
    let qkv = randn(&mut rng, n * width, 1.0);
    let (qn, qn_bits) = bf16_round(&randn(&mut rng, hd, 1.0));
    let (kn, kn_bits) = bf16_round(&randn(&mut rng, hd, 1.0));
    let (cos, sin) = rope_tables(case.max_pos, hd, 10000.0);
    let desc: Vec<u32> = case.rows.iter().flat_map(|&(s, p)| [s, p, 0, 0]).collect();
    let slots = case.rows.iter().map(|r| r.0).max().unwrap() as usize + 1;
    let cache_len = slots * nkv * case.max_pos * hd;
    let b = |v: &[f32]| gpu.buf(v);
    let (qkv_b, cos_b, sin_b) = (b(&qkv), b(&cos), b(&sin));
    let (qn_b, kn_b, desc_b) = (gpu.buf(&qn_bits), gpu.buf(&kn_bits), gpu.buf(&desc));
    let q_b = b(&vec![0.0; n * nh * hd]);
    let (k_b, v_b) = (kv_buffer(gpu, cache_len, format), kv_buffer(gpu, cache_len, format));
    let out_b = b(&vec![0.0; n * nh * hd]);
    let cache = KvCache { k: &k_b, v: &v_b, max_pos: case.max_pos as u32, format };
    let env = gpu.env();
    let rope = QkNormRope {
        label: "rope",
        heads: h,
        norms: Some((&qn_b, &kn_b)),
        eps: 1e-6,
        rope_cos: &cos_b,
        rope_sin: &sin_b,
        row_desc: &desc_b,
        qkv: &qkv_b,
        q_out: &q_b,
        cache,
        rows: RowCount::Talker,
    }
    .build_kernel(&env, RowLayout::default(), rope_kernel);
    let attn = Attention {
        label: "attn",
        heads: h,
        window: case.window,
        row_desc: &desc_b,
        q: &q_b,
        cache,
        out: &out_b,
        rows: RowCount::Talker,
    }
    .build_kernel(&env, RowLayout::default(), kernel);
    gpu.run(RowCounts { talker_rows: n as u32, sessions: 0 }, &[rope, attn]);

    // CPU: per row, normed+roped q; cache of k/v per (slot, pos).
    let mut kc = std::collections::HashMap::new();
    let mut qs = Vec::new();
    for (r, &(slot, pos)) in case.rows.iter().enumerate() {
        let row = &qkv[r * width..(r + 1) * width];
        let mut q = Vec::new();
        for hh in 0..nh {
            q.push(cpu_norm_rope(&row[hh * hd..(hh + 1) * hd], Some(&qn), pos as usize, &cos, &sin));
        }
        qs.push(q);
        for kh in 0..nkv {
            let ko = nh * hd + kh * hd;
            let vo = nh * hd + nkv * hd + kh * hd;
            let k = cpu_norm_rope(&row[ko..ko + hd], Some(&kn), pos as usize, &cos, &sin);
            kc.insert((slot, pos, kh), (kv_round(&k, format), kv_round(&row[vo..vo + hd], format)));
        }
    }
    let mut want = vec![0f32; n * nh * hd];
    for (r, &(slot, pos)) in case.rows.iter().enumerate() {
        for hh in 0..nh {
            let kh = hh / (nh / nkv);
            let first = if case.window > 0 { (pos + 1).saturating_sub(case.window) } else { 0 };
            let keys: Vec<u32> = (first..=pos).collect();
            let scores: Vec<f32> = keys
                .iter()
                .map(|&j| {
                    let k = &kc[&(slot, j, kh)].0;
                    qs[r][hh].iter().zip(k).map(|(a, b)| a * b).sum::<f32>() / (hd as f32).sqrt()
                })
                .collect();
            let m = scores.iter().cloned().fold(f32::MIN, f32::max);
            let e: Vec<f32> = scores.iter().map(|s| (s - m).exp()).collect();
            let z: f32 = e.iter().sum();
            for d in 0..hd {
                let v: f32 = keys.iter().zip(&e).map(|(&j, w)| w * kc[&(slot, j, kh)].1[d]).sum();
                want[r * nh * hd + hh * hd + d] = v / z;
            }
        }
    }
    let q_want: Vec<f32> = qs.iter().flatten().flatten().cloned().collect();
    assert_close(&format!("q after norm+rope ({rope_kernel:?})"), &gpu.read::<f32>(&q_b), &q_want, 1e-5);
    // The rare key whose f16 rounding lands on the other side of the CPU's shifts a score by an
    // f16 step.
    let tol = if format == KvFormat::F16 { 2e-3 } else { 2e-5 };
    let what = format!("attention output ({kernel:?}, {format:?} cache)");
    assert_close(&what, &gpu.read::<f32>(&out_b), &want, tol);
    let got_k = read_kv(gpu, &k_b, format);
    let (slot, pos) = case.rows[0];
    let at = ((slot as usize * nkv) * case.max_pos + pos as usize) * hd;
    assert_close(&format!("K cache row ({format:?})"), &got_k[at..at + hd], &kc[&(slot, pos, 0)].0, 2e-3);
}

#[test]
fn prefill_and_decode_rows_share_one_dispatch() {
    // Slot 0 prefills 5 positions while slot 2 prefills 3, in one tick; GQA 4:2.
    let rows = (0..5).map(|p| (0, p)).chain((0..3).map(|p| (2, p))).collect();
    run_case(
        &Case { heads: Heads { n_heads: 4, n_kv_heads: 2, head_dim: 20 }, max_pos: 9, window: 0, rows },
        11,
    );
}

#[test]
fn long_context_crosses_chunks() {
    // 150 positions: three 64-key chunks, head_dim 128 (two dims per thread), GQA 6:2.
    let rows = (0..150).map(|p| (1, p)).collect();
    run_case(
        &Case { heads: Heads { n_heads: 6, n_kv_heads: 2, head_dim: 128 }, max_pos: 151, window: 0, rows },
        12,
    );
}

#[test]
fn sliding_window_limits_keys() {
    let rows = (0..80).map(|p| (0, p)).collect();
    run_case(
        &Case { heads: Heads { n_heads: 2, n_kv_heads: 2, head_dim: 16 }, max_pos: 80, window: 72, rows },
        13,
    );
}

#[test]
fn subgroup_kernel_covers_many_keys_and_rows() {
    // Head dims that split over the lanes (e.g. 64 = 8 lanes × 8 dims on lavapipe), 100 keys,
    // two sessions in one dispatch, GQA 4:1.
    let rows = (0..100).map(|p| (0, p)).chain((0..7).map(|p| (1, p))).collect();
    run_case(
        &Case { heads: Heads { n_heads: 4, n_kv_heads: 1, head_dim: 64 }, max_pos: 100, window: 0, rows },
        14,
    );
}

/// A KV cache whose layer buffer exceeds the adapter's largest binding is a capacity error (no
/// allocation) that names the buffer and, for an f32 cache, the f16 remedy.
#[test]
fn an_oversized_kv_cache_is_a_capacity_error() {
    use lyre_engine::model::transformer::{KvBuffers, StackShape};
    let gpu = Gpu::new();
    let s = StackShape {
        hidden: 64,
        inter: 128,
        layers: 1,
        heads: Heads { n_heads: 4, n_kv_heads: 2, head_dim: 64 },
        eps: 1e-6,
        rope_theta: 1e6,
    };
    let per_slot = 2 * 64 * 4096 * 4;
    let slots = (gpu.ctx.max_binding() / per_slot + 1) as usize;
    for (format, remedy) in [(KvFormat::F32, true), (KvFormat::F16, false)] {
        let slots = if format == KvFormat::F16 { 2 * slots } else { slots };
        let e = KvBuffers::new(&gpu.ctx, "big.kv", &s, slots, 4096, format).err().expect("too large");
        let m = e.to_string();
        assert!(m.starts_with("capacity:") && m.contains("big.kv.k0"), "{m}");
        assert_eq!(m.contains("engine.kv_cache = \"f16\""), remedy, "{m}");
    }
}
