// Row descriptors (slot, position, 0, 0) of each session's frames this step, for the attention
// kernels: row s * frames + t is at position frame_index + t. Past the RoPE table, a position
// wraps back by `period` (a multiple of the KV ring's length) once per period when `period` is
// set (the engine rotates the slot's keys to match), else it is clamped to the table.

struct Params {
    frames: u32,
    max_pos: u32,
    period: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(3) var<storage, read_write> rows: array<vec4<u32>>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let s = wid.x;
    if (s >= n_sessions()) {
        return;
    }
    for (var t = li; t < p.frames; t += 64u) {
        var pos = session_frame(s) + t;
        if (pos >= p.max_pos) {
            if (p.period > 0u) {
                pos = p.max_pos - p.period + (pos - p.max_pos) % p.period;
            } else {
                pos = p.max_pos - 1u;
            }
        }
        rows[s * p.frames + t] = vec4<u32>(session_slot(s), pos, 0u, 0u);
    }
}
