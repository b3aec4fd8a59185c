// Parameters, bindings and bf16 helpers shared by the three matmul kernels (prepended to each):
// y[r, n] (+)= act(bias[n] + sum_k x[r, k] * w[n, k]); w and bias are bf16, two per u32.

struct Params {
    k: u32,
    n: u32,
    rows_index: u32,
    accumulate: u32,
    x_stride: u32,
    x_offset: u32,
    x_row_step: u32,
    has_bias: u32,
    y_stride: u32,
    y_offset: u32,
    activation: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> counts: array<u32>;
@group(0) @binding(2) var<storage, read> w: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read> bias: array<u32>;
@group(0) @binding(4) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;

fn bf16x4(v: vec2<u32>) -> vec4<f32> {
    return vec4<f32>(
        bitcast<f32>(v.x << 16u), bitcast<f32>(v.x & 0xffff0000u),
        bitcast<f32>(v.y << 16u), bitcast<f32>(v.y & 0xffff0000u));
}

fn bias_at(i: u32) -> f32 {
    let word = bias[i / 2u];
    if (i % 2u == 0u) {
        return bitcast<f32>(word << 16u);
    }
    return bitcast<f32>(word & 0xffff0000u);
}
