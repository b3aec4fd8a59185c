// Keeps a decoder slot's sliding-window keys consistent when its RoPE positions wrap (see
// `RopeWrap` in codec/mod.rs). Runs after a decoder step: when the frame after the session's
// frame begins a period the slot has not entered yet, every key in the slot's K ring of this
// layer is rotated back by `period` positions, so scores between the next query (at its wrapped
// position) and those keys equal the unwrapped ones. One workgroup per session; `applied[slot]`
// counts the periods the slot's keys have been moved back, and the last layer's dispatch
// (`commit`) records the new count, so a frame decoded twice (a segment's end replaced by the
// next segment's first frame) never rotates twice. Sessions redirected to the dump slot (their
// step did not enter the slot) are skipped.

struct Params {
    n_kv_heads: u32,
    len: u32,
    head_dim: u32,
    table: u32,
    period: u32,
    dump_slot: u32,
    commit: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// [half] cos, then [half] sin, of `period * inv_freq[i]`.
@group(0) @binding(3) var<storage, read> shift: array<f32>;
@group(0) @binding(4) var<storage, read_write> keys: array<f32>;
@group(0) @binding(5) var<storage, read_write> applied: array<u32>;

var<workgroup> go: u32;
var<workgroup> wanted: u32;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let s = wid.x;
    if (li == 0u) {
        var run = 0u;
        if (s < n_sessions()) {
            let slot = session_slot(s);
            let f = session_frame(s) + 1u;
            if (slot != p.dump_slot && f >= p.table) {
                let w = (f - p.table) / p.period + 1u;
                if (w > applied[slot]) {
                    run = 1u;
                    wanted = w;
                }
            }
        }
        go = run;
    }
    if (workgroupUniformLoad(&go) == 0u) {
        return;
    }
    let slot = session_slot(s);
    let half = p.head_dim / 2u;
    let n = p.n_kv_heads * p.len * half;
    let base = slot * p.n_kv_heads * p.len * p.head_dim;
    for (var e = li; e < n; e += 64u) {
        let i = e % half;
        let row = e / half;
        let at = base + row * p.head_dim + i;
        let c = shift[i];
        let sn = shift[half + i];
        let x1 = keys[at];
        let x2 = keys[at + half];
        keys[at] = x1 * c + x2 * sn;
        keys[at + half] = x2 * c - x1 * sn;
    }
    if (p.commit != 0u && li == 0u) {
        applied[slot] = wanted;
    }
}
