// pcm[s * rows + t] = clamp(x[s, t, 0], -1, 1): the waveform of each session's step, dense.
// Grid: x = a fixed number of workgroups striding over the rows, y = session.

struct Params {
    x: View,
    rows: u32,
    threads: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(3) var<storage, read> x: array<f32>;
@group(0) @binding(4) var<storage, read_write> pcm: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let s = wid.y;
    if (s >= n_sessions()) {
        return;
    }
    for (var t = gid.x; t < p.rows; t += p.threads) {
        pcm[s * p.rows + t] = clamp(x[row_offset(p.x, s, i32(t))], -1.0, 1.0);
    }
}
