// attention.wgsl for GPUs with subgroups (same parameters, bindings and results): one
// workgroup of 256 threads per (head, row); subgroup s takes keys first + s, first + s + NSG, …
// with its lanes splitting the head dims (lane, lane + SG, …), so each key row is one coalesced
// read and its score one subgroupAdd. Each subgroup keeps an online softmax; the subgroups'
// partial results are merged through workgroup memory at the end.
// Needs head_dim = SG × dims-per-lane with at most MAX_DPL dims per lane.

override SG: u32 = 32u;

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

fn store_state(dst: u32, m: f32, l: f32) {}

fn store_out(i: u32, v: f32) {
    out[i] = v;
}

var<workgroup> wg_pos: u32;
var<workgroup> wg_slot: u32;

fn cache_row(j: u32) -> u32 {
    if (p.wrap != 0u) {
        return j % p.max_pos;
    }
    return j;
}

@compute @workgroup_size(256)
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
    let nsg = WG / SG;
    let s = t / SG;
    let lane = t % SG;
    let dpl = hd / SG;
    let kvh = h / (p.n_heads / p.n_kv_heads);
    let kv_base = (slot * p.n_kv_heads + kvh) * p.max_pos;

    var qv = array<f32, MAX_DPL>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for (var i = 0u; i < MAX_DPL; i++) {
        if (i < dpl) {
            qv[i] = q[r * p.q_stride + h * hd + lane + i * SG] * p.scale;
        }
    }
    var first = 0u;
    if (p.window > 0u && pos + 1u > p.window) {
        first = pos + 1u - p.window;
    }
    var m_run = NEG;
    var l_run = 0.0;
    var acc = array<f32, MAX_DPL>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    // The trip count is the same for every subgroup, so subgroupAdd runs in uniform control
    // flow; a subgroup past the last key contributes nothing.
    for (var base = first; base <= pos; base += nsg) {
        let j = base + s;
        let live = j <= pos;
        let kb = (kv_base + cache_row(min(j, pos))) * hd + lane;
        // The values are loaded before the score is needed, so both loads are in flight at once.
        var vv = array<f32, MAX_DPL>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        var part = 0.0;
        for (var i = 0u; i < MAX_DPL; i++) {
            if (i < dpl) {
                vv[i] = f32(v_cache[kb + i * SG]);
                part += qv[i] * f32(k_cache[kb + i * SG]);
            }
        }
        let score = subgroupAdd(part);
        let m_new = select(m_run, max(m_run, score), live);
        let alpha = exp(m_run - m_new);
        let pj = select(0.0, exp(score - m_new), live);
        l_run = l_run * alpha + pj;
        for (var i = 0u; i < MAX_DPL; i++) {
            if (i < dpl) {
                acc[i] = acc[i] * alpha + pj * vv[i];
            }
        }
        m_run = m_new;
    }
    merge_and_store(t, s, lane, dpl, hd, m_run, l_run, acc, r * p.out_stride + h * hd);
}
