// Causal depthwise conv1d (groups = channels) over sequence views:
//   y[s, t, c] = bias[c] + sum_i w[c * taps + i] * x[s, t - (taps - 1 - i) * dil, c]
// (w in the PyTorch [channels][1][taps] order). One thread per (channel, row).

struct Params {
    x: View,
    y: View,
    channels: u32,
    taps: u32,
    dil: u32,
    has_bias: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(3) var<storage, read> w: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read> x: array<f32>;
@group(0) @binding(6) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let c = gid.x;
    let s = wid.y;
    let t = i32(wid.z);
    if (c >= p.channels || s >= n_sessions()) {
        return;
    }
    var acc = 0.0;
    if (p.has_bias != 0u) {
        acc = bias[c];
    }
    for (var i = 0u; i < p.taps; i++) {
        let back = i32((p.taps - 1u - i) * p.dil);
        acc += w[c * p.taps + i] * x[row_offset(p.x, s, t - back) + c];
    }
    y[row_offset(p.y, s, t) + c] = acc;
}
