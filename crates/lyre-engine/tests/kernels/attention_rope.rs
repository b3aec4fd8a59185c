//! The fused q/k-norm + RoPE + attention kernel of decode steps against the two kernels it
//! replaces (themselves checked against the CPU in `attention.rs`) and the CPU's new cache rows.

use lyre_engine::gpu::{RowCount, RowCounts};
use lyre_engine::kernels::attention::{Attention, AttentionRope, Heads, KvCache, QkNormRope, RowLayout};
use lyre_engine::kernels::select::{AttentionKernel, RopeKernel};
use lyre_engine::KvFormat;

use crate::attention::{cpu_norm_rope, rope_tables};
use crate::support::*;

/// The buffers of one run: caches filled by a prompt, then one decode row per session.
struct Setup {
    heads: Heads,
    max_pos: usize,
    /// (slot, prompt length): the decode row sits at position `prompt length`.
    sessions: Vec<(u32, u32)>,
}

struct Outputs {
    out: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
}

fn run(
    gpu: &Gpu,
    case: &Setup,
    seed: u64,
    fused: bool,
    format: KvFormat,
) -> (Outputs, Vec<f32>, Vec<f32>, Vec<f32>) {
    let size = gpu.ctx.fixed_subgroup_size().expect("the test adapter has fixed-size subgroups");
    let mut rng = rng(seed);
    let h = case.heads;
    let (nkv, hd) = (h.n_kv_heads as usize, h.head_dim as usize);
    let width = h.qkv_width() as usize;
    let prompt: Vec<(u32, u32)> =
        case.sessions.iter().flat_map(|&(slot, len)| (0..len).map(move |p| (slot, p))).collect();
    let decode: Vec<(u32, u32)> = case.sessions.clone();
    let prompt_qkv = randn(&mut rng, prompt.len() * width, 1.0);
    let decode_qkv = randn(&mut rng, decode.len() * width, 1.0);
    let (qn, qn_bits) = bf16_round(&randn(&mut rng, hd, 1.0));
    let (kn, kn_bits) = bf16_round(&randn(&mut rng, hd, 1.0));
    let (cos, sin) = rope_tables(case.max_pos, hd, 10000.0);
    let slots = case.sessions.iter().map(|s| s.0).max().unwrap() as usize + 1;
    let cache_len = slots * nkv * case.max_pos * hd;
    let (cos_b, sin_b, qn_b, kn_b) = (gpu.buf(&cos), gpu.buf(&sin), gpu.buf(&qn_bits), gpu.buf(&kn_bits));
    let (k_b, v_b) = (kv_buffer(gpu, cache_len, format), kv_buffer(gpu, cache_len, format));
    let cache = KvCache { k: &k_b, v: &v_b, max_pos: case.max_pos as u32, format };
    let env = gpu.env();
    let two_kernels = |rows: &[(u32, u32)], qkv: &[f32]| {
        let desc: Vec<u32> = rows.iter().flat_map(|&(s, p)| [s, p, 0, 0]).collect();
        let (desc_b, qkv_b) = (gpu.buf(&desc), gpu.buf(qkv));
        let q_b = gpu.buf(&vec![0f32; rows.len() * h.q_width() as usize]);
        let out_b = gpu.buf(&vec![0f32; rows.len() * h.q_width() as usize]);
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
        .build_kernel(&env, RowLayout::default(), RopeKernel::Subgroup { size });
        let attn = Attention {
            label: "attn",
            heads: h,
            window: 0,
            row_desc: &desc_b,
            q: &q_b,
            cache,
            out: &out_b,
            rows: RowCount::Talker,
        }
        .build_kernel(&env, RowLayout::default(), AttentionKernel::Subgroup { size });
        gpu.run(RowCounts { talker_rows: rows.len() as u32, sessions: 0 }, &[rope, attn]);
        gpu.read::<f32>(&out_b)
    };
    two_kernels(&prompt, &prompt_qkv);
    let out = if fused {
        let desc: Vec<u32> = decode.iter().flat_map(|&(s, p)| [s, p, 0, 0]).collect();
        let (desc_b, qkv_b) = (gpu.buf(&desc), gpu.buf(&decode_qkv));
        let out_b = gpu.buf(&vec![0f32; decode.len() * h.q_width() as usize]);
        let d = AttentionRope {
            label: "attention_rope",
            heads: h,
            norms: Some((&qn_b, &kn_b)),
            eps: 1e-6,
            rope_cos: &cos_b,
            rope_sin: &sin_b,
            row_desc: &desc_b,
            qkv: &qkv_b,
            cache,
            out: &out_b,
            rows: RowCount::Sessions,
        }
        .build_subgroup(&env, size)
        .unwrap();
        let n = decode.len() as u32;
        gpu.run(RowCounts { talker_rows: n, sessions: n }, &[d]);
        gpu.read::<f32>(&out_b)
    } else {
        two_kernels(&decode, &decode_qkv)
    };
    (Outputs { out, k: read_kv(gpu, &k_b, format), v: read_kv(gpu, &v_b, format) }, decode_qkv, qn, kn)
}

fn check(case: Setup, seed: u64) {
    for format in [KvFormat::F32, KvFormat::F16] {
        check_format(&case, seed, format);
    }
}

/// The fused kernel rounds the row's own key and value as the cache stores them, so it matches
/// the two kernels (which read them back from the cache) in either format.
fn check_format(case: &Setup, seed: u64, format: KvFormat) {
    let gpu = Gpu::new();
    let size = gpu.ctx.fixed_subgroup_size().unwrap();
    assert!(RopeKernel::fits(size, case.heads.head_dim), "the case must fit subgroups of {size}");
    let (fused, decode_qkv, _, kn) = run(&gpu, case, seed, true, format);
    let (separate, ..) = run(&gpu, case, seed, false, format);
    assert_close(&format!("fused attention output ({format:?})"), &fused.out, &separate.out, 1e-6);
    assert_close(&format!("K cache ({format:?})"), &fused.k, &separate.k, 1e-6);
    assert_close("V cache", &fused.v, &separate.v, 0.0);
    // The rows the fused kernel wrote, against the CPU.
    let h = case.heads;
    let (nh, nkv, hd) = (h.n_heads as usize, h.n_kv_heads as usize, h.head_dim as usize);
    let (cos, sin) = rope_tables(case.max_pos, hd, 10000.0);
    let width = h.qkv_width() as usize;
    for (r, &(slot, pos)) in case.sessions.iter().enumerate() {
        for kh in 0..nkv {
            let at = ((slot as usize * nkv + kh) * case.max_pos + pos as usize) * hd;
            let ko = r * width + nh * hd + kh * hd;
            let want = cpu_norm_rope(&decode_qkv[ko..ko + hd], Some(&kn), pos as usize, &cos, &sin);
            let tol = if format == KvFormat::F16 { 2e-3 } else { 1e-5 };
            assert_close(&format!("new K row {slot}/{kh} ({format:?})"), &fused.k[at..at + hd], &want, tol);
            let vo = r * width + (nh + nkv) * hd + kh * hd;
            assert_close(
                &format!("new V row {slot}/{kh} ({format:?})"),
                &fused.v[at..at + hd],
                &kv_round(&decode_qkv[vo..vo + hd], format),
                0.0,
            );
        }
    }
    assert!(fused.out.iter().any(|v| *v != 0.0), "the fused kernel wrote its output");
}

/// Head dims of two, four and eight dims per lane of the adapter's subgroups (lavapipe: 16, 32,
/// 64; the H200: 64, 128, 256).
fn head_dims() -> [u32; 3] {
    let size = Gpu::new().ctx.fixed_subgroup_size().expect("the test adapter has fixed-size subgroups");
    [2 * size, 4 * size, 8 * size]
}

#[test]
fn fused_decode_step_matches_rope_then_attention() {
    // Three sessions at different positions (one at position 0: no history), GQA 4:2.
    let heads = Heads { n_heads: 4, n_kv_heads: 2, head_dim: head_dims()[1] };
    check(Setup { heads, max_pos: 40, sessions: vec![(0, 9), (3, 0), (1, 37)] }, 21);
}

#[test]
fn fused_decode_step_covers_head_sizes() {
    // Two and eight dims per lane; one kv head for six q heads.
    for (hd, seed) in [(head_dims()[0], 22), (head_dims()[2], 23)] {
        let heads = Heads { n_heads: 6, n_kv_heads: 1, head_dim: hd };
        check(Setup { heads, max_pos: 20, sessions: vec![(2, 19), (0, 5)] }, seed);
    }
}
