// Splits a fused q|k|v row into heads, applies the per-head RMSNorm (q_norm / k_norm, when
// present) and rotary embedding (rotate_half convention, precomputed cos/sin tables), writes q
// to `q_out` and k, v into the KV cache at the row's (slot, position).
// Grid: x = one workgroup per head (q heads, then k heads, then v heads), y = one per row.
// Optional (0 = off): `wrap` writes position pos at cache row pos % max_pos (a ring; RoPE still
// uses pos); `rows_per_group` > 1 puts that many consecutive rows on grid z.

struct Params {
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    max_pos: u32,
    qkv_stride: u32,
    q_stride: u32,
    has_norm: u32,
    eps: f32,
    wrap: u32,
    rows_per_group: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> rows: array<Row>;
@group(0) @binding(2) var<storage, read> qkv: array<f32>;
@group(0) @binding(3) var<storage, read> q_norm: array<u32>;
@group(0) @binding(4) var<storage, read> k_norm: array<u32>;
@group(0) @binding(5) var<storage, read> rope_cos: array<f32>;
@group(0) @binding(6) var<storage, read> rope_sin: array<f32>;
@group(0) @binding(7) var<storage, read_write> q_out: array<f32>;
@group(0) @binding(8) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(9) var<storage, read_write> v_cache: array<f32>;

const WG: u32 = 64u;
const MAX_HD: u32 = 256u;
var<workgroup> head: array<f32, MAX_HD>;
var<workgroup> partial: array<f32, WG>;

fn bf16_at(buf_is_q: bool, i: u32) -> f32 {
    var word: u32;
    if (buf_is_q) {
        word = q_norm[i / 2u];
    } else {
        word = k_norm[i / 2u];
    }
    if (i % 2u == 0u) {
        return bitcast<f32>(word << 16u);
    }
    return bitcast<f32>(word & 0xffff0000u);
}

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let h = wid.x;
    let r = wid.y * max(p.rows_per_group, 1u) + wid.z;
    let hd = p.head_dim;
    let row = rows[r];
    var cache_pos = row.pos;
    if (p.wrap != 0u) {
        cache_pos = row.pos % p.max_pos;
    }
    let src = r * p.qkv_stride + h * hd;
    let is_q = h < p.n_heads;
    let is_v = h >= p.n_heads + p.n_kv_heads;
    if (is_v) {
        let kvh = h - p.n_heads - p.n_kv_heads;
        let dst = ((row.slot * p.n_kv_heads + kvh) * p.max_pos + cache_pos) * hd;
        for (var d = t; d < hd; d += WG) {
            v_cache[dst + d] = qkv[src + d];
        }
        return;
    }
    var ss = 0.0;
    for (var d = t; d < hd; d += WG) {
        let v = qkv[src + d];
        head[d] = v;
        ss += v * v;
    }
    partial[t] = ss;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            partial[t] += partial[t + s];
        }
        workgroupBarrier();
    }
    if (p.has_norm != 0u) {
        let inv = inverseSqrt(partial[0] / f32(hd) + p.eps);
        for (var d = t; d < hd; d += WG) {
            head[d] = bf16_at(is_q, d) * (head[d] * inv);
        }
    }
    workgroupBarrier();
    let half = hd / 2u;
    let tb = row.pos * half;
    var dst: u32;
    if (is_q) {
        dst = r * p.q_stride + h * hd;
    } else {
        let kvh = h - p.n_heads;
        dst = ((row.slot * p.n_kv_heads + kvh) * p.max_pos + cache_pos) * hd;
    }
    for (var d = t; d < half; d += WG) {
        let c = rope_cos[tb + d];
        let s = rope_sin[tb + d];
        let a = head[d];
        let b = head[d + half];
        let lo = a * c - b * s;
        let hi = b * c + a * s;
        if (is_q) {
            q_out[dst + d] = lo;
            q_out[dst + d + half] = hi;
        } else {
            k_cache[dst + d] = lo;
            k_cache[dst + d + half] = hi;
        }
    }
}
