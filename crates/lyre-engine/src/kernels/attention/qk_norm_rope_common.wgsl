// What both q/k-norm + RoPE kernels share (prepended to each): they split a fused q|k|v row into
// heads, apply the per-head RMSNorm (q_norm / k_norm, when present) and rotary embedding
// (rotate_half convention, precomputed cos/sin tables), write q to `q_out` and k, v into the KV
// cache at the row's (slot, position). Heads are numbered q heads, then k heads, then v heads.
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
// Bindings 3 and 4 (q_norm, k_norm) and norm_weight(): qk_norm_weights.wgsl.
@group(0) @binding(5) var<storage, read> rope_cos: array<f32>;
@group(0) @binding(6) var<storage, read> rope_sin: array<f32>;
@group(0) @binding(7) var<storage, read_write> q_out: array<f32>;
@group(0) @binding(8) var<storage, read_write> k_cache: array<kv_t>;
@group(0) @binding(9) var<storage, read_write> v_cache: array<kv_t>;

// Row r of the dispatch (grid y, and z when rows are grouped).
fn dispatch_row(wid: vec3<u32>) -> u32 {
    return wid.y * max(p.rows_per_group, 1u) + wid.z;
}

// Where the row stores k and v of kv head `kvh`.
fn cache_base(row: Row, kvh: u32) -> u32 {
    var cache_pos = row.pos;
    if (p.wrap != 0u) {
        cache_pos = row.pos % p.max_pos;
    }
    return ((row.slot * p.n_kv_heads + kvh) * p.max_pos + cache_pos) * p.head_dim;
}

// Where head h (q or k) of dispatch row r goes: its q row, or the K cache at the row's position.
fn rotated_base(r: u32, h: u32, row: Row) -> u32 {
    if (h < p.n_heads) {
        return r * p.q_stride + h * p.head_dim;
    }
    return cache_base(row, h - p.n_heads);
}

// Rotates the pair (a, b) = (head[d], head[d + head_dim / 2]) by position `pos` and stores it
// from `dst`: into q_out for a q head, the K cache for a k head.
fn store_rotated(is_q: bool, dst: u32, d: u32, pos: u32, a: f32, b: f32) {
    let half = p.head_dim / 2u;
    let c = rope_cos[pos * half + d];
    let s = rope_sin[pos * half + d];
    let lo = a * c - b * s;
    let hi = b * c + a * s;
    if (is_q) {
        q_out[dst + d] = lo;
        q_out[dst + d + half] = hi;
    } else {
        k_cache[dst + d] = kv_t(lo);
        k_cache[dst + d + half] = kv_t(hi);
    }
}
