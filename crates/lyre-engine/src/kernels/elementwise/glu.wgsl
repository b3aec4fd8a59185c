// SwiGLU over sequence views: y[s, t, i] = silu(x[s, t, i]) * x[s, t, inter + i], x rows = [gate | up].
// Grid: x = channel groups, y = session, z = row.

struct Params {
    x: View,
    y: View,
    inter: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(3) var<storage, read> x: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let i = gid.x;
    let s = wid.y;
    if (i >= p.inter || s >= n_sessions()) {
        return;
    }
    let t = i32(wid.z);
    let xb = row_offset(p.x, s, t);
    let g = x[xb + i];
    y[row_offset(p.y, s, t) + i] = g / (1.0 + exp(min(-g, 80.0))) * x[xb + p.inter + i];
}
