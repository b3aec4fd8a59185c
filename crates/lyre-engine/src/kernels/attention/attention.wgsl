// Causal attention of one query row against its own KV-cache slot, one workgroup per
// (head, row). Keys at positions [first, pos] are visited in chunks of 64 with an online
// softmax; `window` > 0 limits the keys to the last `window` positions (sliding window).
// GQA: query head h reads kv head h / (n_heads / n_kv_heads).
// Optional (0 = off): `wrap` stores position j at cache row j % max_pos (a ring of the last
// max_pos positions, for sliding-window callers); `rows_per_group` > 1 puts that many
// consecutive rows on grid z (row = wid.y * rows_per_group + wid.z).

struct Params {
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    max_pos: u32,
    window: u32,
    q_stride: u32,
    out_stride: u32,
    scale: f32,
    wrap: u32,
    rows_per_group: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> rows: array<Row>;
@group(0) @binding(2) var<storage, read> q: array<f32>;
@group(0) @binding(3) var<storage, read> k_cache: array<kv_t>;
@group(0) @binding(4) var<storage, read> v_cache: array<kv_t>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

const WG: u32 = 64u;
const MAX_HD: u32 = 256u;
const DIMS_PER_THREAD: u32 = 4u; // MAX_HD / WG
const NEG: f32 = -3.0e38;

fn cache_row(j: u32) -> u32 {
    if (p.wrap != 0u) {
        return j % p.max_pos;
    }
    return j;
}

var<workgroup> qh: array<f32, MAX_HD>;
var<workgroup> score: array<f32, WG>;
var<workgroup> red: array<f32, WG>;
var<workgroup> wg_pos: u32;
var<workgroup> wg_slot: u32;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let h = wid.x;
    let r = wid.y * max(p.rows_per_group, 1u) + wid.z;
    let hd = p.head_dim;
    if (t == 0u) {
        wg_pos = rows[r].pos;
        wg_slot = rows[r].slot;
    }
    let pos = workgroupUniformLoad(&wg_pos);
    let slot = workgroupUniformLoad(&wg_slot);
    let kvh = h / (p.n_heads / p.n_kv_heads);
    let kv_base = (slot * p.n_kv_heads + kvh) * p.max_pos;
    for (var d = t; d < hd; d += WG) {
        qh[d] = q[r * p.q_stride + h * hd + d];
    }
    workgroupBarrier();

    var first = 0u;
    if (p.window > 0u && pos + 1u > p.window) {
        first = pos + 1u - p.window;
    }
    var m_run = NEG;
    var l_run = 0.0;
    var acc = array<f32, DIMS_PER_THREAD>(0.0, 0.0, 0.0, 0.0);
    for (var base = first; base <= pos; base += WG) {
        let j = base + t;
        var s = NEG;
        if (j <= pos) {
            let kb = (kv_base + cache_row(j)) * hd;
            var dot = 0.0;
            for (var d = 0u; d < hd; d++) {
                dot += qh[d] * f32(k_cache[kb + d]);
            }
            s = dot * p.scale;
        }
        score[t] = s;
        red[t] = s;
        workgroupBarrier();
        for (var st = WG / 2u; st > 0u; st >>= 1u) {
            if (t < st) {
                red[t] = max(red[t], red[t + st]);
            }
            workgroupBarrier();
        }
        let m_new = max(m_run, red[0]);
        let alpha = exp(m_run - m_new);
        let n_keys = min(WG, pos + 1u - base);
        var l_chunk = 0.0;
        for (var c = 0u; c < n_keys; c++) {
            l_chunk += exp(score[c] - m_new);
        }
        for (var i = 0u; i < DIMS_PER_THREAD; i++) {
            let d = t + i * WG;
            if (d < hd) {
                var a = acc[i] * alpha;
                for (var c = 0u; c < n_keys; c++) {
                    a += exp(score[c] - m_new) * f32(v_cache[(kv_base + cache_row(base + c)) * hd + d]);
                }
                acc[i] = a;
            }
        }
        l_run = l_run * alpha + l_chunk;
        m_run = m_new;
        workgroupBarrier();
    }
    for (var i = 0u; i < DIMS_PER_THREAD; i++) {
        let d = t + i * WG;
        if (d < hd) {
            out[r * p.out_stride + h * hd + d] = acc[i] / l_run;
        }
    }
}
