// One q head of one row through q/k-norm + RoPE, the KV-cache write and attention (shared by
// attention_rope_sg.wgsl and decode_layer.wgsl, after descriptors.wgsl, qk_norm_weights.wgsl and
// attention_merge_sg.wgsl). The kernel supplies `p` (n_heads, n_kv_heads, head_dim, max_pos,
// has_norm, eps, scale), `load_qkv(i)` (its fused q|k|v values), `store_out(i, v)` and
// `store_state(dst, max, sum)`.
//
// Every subgroup normalises and rotates the row's q head and the k head of its KV group itself
// (lane l holds dims l + SG·i, so each RoPE pair sits in one lane), and takes the row's own key
// and value from registers instead of the cache: the cache holds only earlier positions, which
// earlier dispatches wrote, so no workgroup reads what another one writes. The first q head of
// each KV group stores the new k and v at the row's position for later steps.
// Needs head_dim = SG · DPL with DPL even and at most 8.

override SG: u32 = 32u;
override DPL: u32 = 4u;

@group(0) @binding(5) var<storage, read> rope_cos: array<f32>;
@group(0) @binding(6) var<storage, read> rope_sin: array<f32>;
@group(0) @binding(7) var<storage, read_write> k_cache: array<kv_t>;
@group(0) @binding(8) var<storage, read_write> v_cache: array<kv_t>;

// The lane's dims of head `h` (q heads first, then k heads) of the fused row at `src`, after
// the per-head RMSNorm and RoPE at `pos`.
fn rotated_head(src: u32, h: u32, lane: u32, pos: u32) -> array<f32, 8> {
    let is_q = h < p.n_heads;
    let base = src + h * p.head_dim + lane;
    var v = array<f32, 8>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    var ss = 0.0;
    for (var i = 0u; i < MAX_DPL; i++) {
        if (i < DPL) {
            v[i] = load_qkv(base + i * SG);
            ss += v[i] * v[i];
        }
    }
    let total = subgroupAdd(ss);
    if (p.has_norm != 0u) {
        let inv = inverseSqrt(total / f32(p.head_dim) + p.eps);
        for (var i = 0u; i < MAX_DPL; i++) {
            if (i < DPL) {
                v[i] = norm_weight(is_q, lane + i * SG) * (v[i] * inv);
            }
        }
    }
    let half = p.head_dim / 2u;
    for (var i = 0u; i < MAX_DPL / 2u; i++) {
        if (i < DPL / 2u) {
            let d = lane + i * SG;
            let c = rope_cos[pos * half + d];
            let s = rope_sin[pos * half + d];
            let a = v[i];
            let b = v[i + DPL / 2u];
            v[i] = a * c - b * s;
            v[i + DPL / 2u] = b * c + a * s;
        }
    }
    return v;
}

// Attention of q head `h` of the row whose q|k|v values start at `src` (cache slot `slot`, position
// `pos`) over keys `first..=last` (last <= pos; all of them: 0, pos); the head's output goes to
// `dst..dst + head_dim`. The part that holds `pos` writes the row's key and value to the cache.
// Called from uniform control flow.
fn attend_head(t: u32, h: u32, src: u32, slot: u32, pos: u32, first: u32, last: u32, dst: u32) {
    let hd = p.head_dim;
    let nsg = WG / SG;
    let s = t / SG;
    let lane = t % SG;
    let group = p.n_heads / p.n_kv_heads;
    let kvh = h / group;
    let kv_base = (slot * p.n_kv_heads + kvh) * p.max_pos;

    var qv = rotated_head(src, h, lane, pos);
    for (var i = 0u; i < MAX_DPL; i++) {
        qv[i] *= p.scale;
    }
    // The row's own key and value as the cache stores them (kv_round), so this path equals the
    // one that reads them back from the cache.
    var k_new = rotated_head(src, p.n_heads + kvh, lane, pos);
    var v_new = array<f32, 8>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    let v_src = src + (p.n_heads + p.n_kv_heads + kvh) * hd + lane;
    for (var i = 0u; i < MAX_DPL; i++) {
        if (i < DPL) {
            k_new[i] = kv_round(k_new[i]);
            v_new[i] = kv_round(load_qkv(v_src + i * SG));
        }
    }
    if (h % group == 0u && s == 0u && last == pos) {
        let at = (kv_base + pos) * hd + lane;
        for (var i = 0u; i < MAX_DPL; i++) {
            if (i < DPL) {
                k_cache[at + i * SG] = kv_t(k_new[i]);
                v_cache[at + i * SG] = kv_t(v_new[i]);
            }
        }
    }

    var m_run = NEG;
    var l_run = 0.0;
    var acc = array<f32, 8>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    // The trip count is the same for every subgroup, so subgroupAdd runs in uniform control
    // flow; a subgroup past the last key contributes nothing.
    for (var base = first; base <= last; base += nsg) {
        let j = base + s;
        let live = j <= last;
        let cached = j < pos;
        let kb = (kv_base + min(j, pos)) * hd + lane;
        var vv = array<f32, 8>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        var part = 0.0;
        for (var i = 0u; i < MAX_DPL; i++) {
            if (i < DPL) {
                var kj = k_new[i];
                vv[i] = v_new[i];
                if (cached) {
                    kj = f32(k_cache[kb + i * SG]);
                    vv[i] = f32(v_cache[kb + i * SG]);
                }
                part += qv[i] * kj;
            }
        }
        let score = subgroupAdd(part);
        let m_new = select(m_run, max(m_run, score), live);
        let alpha = exp(m_run - m_new);
        let pj = select(0.0, exp(score - m_new), live);
        l_run = l_run * alpha + pj;
        for (var i = 0u; i < MAX_DPL; i++) {
            if (i < DPL) {
                acc[i] = acc[i] * alpha + pj * vv[i];
            }
        }
        m_run = m_new;
    }
    merge_and_store(t, s, lane, DPL, hd, m_run, l_run, acc, dst);
}
