// y[r] = w * x[r] / sqrt(mean(x[r]^2) + eps), one workgroup per row (the grid is exact).
// w is bf16 (two per u32) or f32, chosen by the WEIGHT_F32 override.
// Each thread issues UNROLL independent loads per step: at batch 1 this is a single workgroup,
// and a loop of one dependent load per iteration cost ~12 µs on an H200 (docs/performance-history.md).

override WEIGHT_F32: bool = false;

struct Params {
    dim: u32,
    x_stride: u32,
    x_offset: u32,
    x_row_step: u32,
    y_stride: u32,
    y_offset: u32,
    eps: f32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

const WG: u32 = 256u;
const UNROLL: u32 = 4u;
var<workgroup> partial: array<f32, WG>;

fn weight(i: u32) -> f32 {
    if (WEIGHT_F32) {
        return bitcast<f32>(w[i]);
    }
    let word = w[i / 2u];
    if (i % 2u == 0u) {
        return bitcast<f32>(word << 16u);
    }
    return bitcast<f32>(word & 0xffff0000u);
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let row = wid.x;
    let xb = p.x_offset + row * p.x_row_step * p.x_stride;
    var ss = 0.0;
    for (var i0 = t; i0 < p.dim; i0 += UNROLL * WG) {
        var v = vec4<f32>(0.0);
        for (var u = 0u; u < UNROLL; u++) {
            let i = i0 + u * WG;
            v[u] = select(0.0, x[xb + min(i, p.dim - 1u)], i < p.dim);
        }
        ss += dot(v, v);
    }
    partial[t] = ss;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            partial[t] += partial[t + s];
        }
        workgroupBarrier();
    }
    let inv = inverseSqrt(partial[0] / f32(p.dim) + p.eps);
    let yb = p.y_offset + row * p.y_stride;
    for (var i0 = t; i0 < p.dim; i0 += UNROLL * WG) {
        for (var u = 0u; u < UNROLL; u++) {
            let i = i0 + u * WG;
            if (i < p.dim) {
                y[yb + i] = weight(i) * (x[xb + i] * inv);
            }
        }
    }
}
