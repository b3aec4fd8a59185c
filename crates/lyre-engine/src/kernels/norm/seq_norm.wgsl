// RMSNorm (`w * x / sqrt(mean(x^2) + eps)`) or LayerNorm (`(x - mean) / sqrt(var + eps) * w + b`,
// two-pass variance) over each row of a sequence view, f32 weights. One workgroup per
// (session, row): grid x = session, y = row.

struct Params {
    x: View,
    y: View,
    dim: u32,
    layer_norm: u32,
    has_bias: u32,
    eps: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(3) var<storage, read> w: array<f32>;
@group(0) @binding(4) var<storage, read> b: array<f32>;
@group(0) @binding(5) var<storage, read> x: array<f32>;
@group(0) @binding(6) var<storage, read_write> y: array<f32>;

const WG: u32 = 64u;
var<workgroup> partial: array<f32, WG>;
var<workgroup> wg_sessions: u32;

fn workgroup_sum(t: u32, v: f32) -> f32 {
    partial[t] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            partial[t] += partial[t + s];
        }
        workgroupBarrier();
    }
    let total = partial[0];
    workgroupBarrier();
    return total;
}

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let s = wid.x;
    if (t == 0u) {
        wg_sessions = n_sessions();
    }
    if (s >= workgroupUniformLoad(&wg_sessions)) {
        return;
    }
    let xb = row_offset(p.x, s, i32(wid.y));
    let yb = row_offset(p.y, s, i32(wid.y));
    var mean = 0.0;
    if (p.layer_norm != 0u) {
        var sum = 0.0;
        for (var i = t; i < p.dim; i += WG) {
            sum += x[xb + i];
        }
        mean = workgroup_sum(t, sum) / f32(p.dim);
    }
    var ss = 0.0;
    for (var i = t; i < p.dim; i += WG) {
        let d = x[xb + i] - mean;
        ss += d * d;
    }
    let inv = inverseSqrt(workgroup_sum(t, ss) / f32(p.dim) + p.eps);
    for (var i = t; i < p.dim; i += WG) {
        var v = w[i] * ((x[xb + i] - mean) * inv);
        if (p.has_bias != 0u) {
            v += b[i];
        }
        y[yb + i] = v;
    }
}
