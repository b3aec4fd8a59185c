// Parameters, bindings and bf16 helpers shared by the matmul kernels (prepended to each, after
// bf16.wgsl; the weight and gamma bindings come from matmul_weights4.wgsl or the kernel itself):
// y[r, n] (+)= act(bias[n] + sum_k in(x)[r, k] * w[n, k]); w, bias and gamma are bf16, two per u32.
//
// INPUT selects what the kernel reads as its input row (an override, so each mode is its own
// pipeline and the unused paths compile away):
//   0 plain:       in(x)[r, k] = x[r, k]
//   1 RMS-normed:  in(x)[r, k] = gamma[k] * x[r, k] * rsqrt(mean_k(x[r]^2) + eps). gamma is folded
//                  into the weight (or x) load, the sum of squares of the raw x is accumulated in
//                  the k loop, and the dot product is scaled by rsqrt once at the end.
//   2 SwiGLU:      rows hold [gate | up] (x_stride >= 2k); in(x)[r, k] = silu(gate[k]) * up[k],
//                  the same expression as swiglu.wgsl.
override INPUT: u32 = 0u;
const INPUT_RMS: u32 = 1u;
const INPUT_SWIGLU: u32 = 2u;

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
    eps: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> counts: array<u32>;
@group(0) @binding(3) var<storage, read> bias: array<u32>;
@group(0) @binding(4) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;

fn bias_at(i: u32) -> f32 {
    let word = bias[i / 2u];
    if (i % 2u == 0u) {
        return bitcast<f32>(word << 16u);
    }
    return bitcast<f32>(word & 0xffff0000u);
}

// The input values k = 4i..4i+3 of the row whose first vec4 is x[base] (before any RMS scale).
fn x_in(base: u32, i: u32) -> vec4<f32> {
    let v = x[base + i];
    if (INPUT == INPUT_SWIGLU) {
        return input_of(v, x[base + p.k / 4u + i]);
    }
    return v;
}

// The input transform of a loaded x vec4 `v`: SwiGLU with its gate half `u` in that mode, else
// `v` as it is.
fn input_of(v: vec4<f32>, u: vec4<f32>) -> vec4<f32> {
    if (INPUT == INPUT_SWIGLU) {
        return v / (1.0 + exp(min(-v, vec4<f32>(80.0)))) * u;
    }
    return v;
}

// What a loaded x vec4 adds to its row's sum of squares (only the RMS-normed mode needs it).
fn sq(v: vec4<f32>) -> f32 {
    if (INPUT == INPUT_RMS) {
        return dot(v, v);
    }
    return 0.0;
}

// The factor a row's dot products are scaled by: rsqrt(mean(x^2) + eps), or 1.
fn row_scale(sumsq: f32) -> f32 {
    if (INPUT == INPUT_RMS) {
        return inverseSqrt(sumsq / f32(p.k) + p.eps);
    }
    return 1.0;
}

// First vec4 of input row r.
fn row_base(r: u32) -> u32 {
    return (p.x_offset + r * p.x_row_step * p.x_stride) / 4u;
}

// The epilogue of output (row, n): bias, activation, residual, store. `v_in` is the finished
// dot product (RMS scale applied).
fn finish(v_in: f32, n: u32, row: u32) {
    var v = v_in;
    if (p.has_bias != 0u) {
        v += bias_at(n);
    }
    if (p.activation == 1u) {
        v = v / (1.0 + exp(min(-v, 80.0)));
    }
    let yi = p.y_offset + row * p.y_stride + n;
    if (p.accumulate != 0u) {
        v += y[yi];
    }
    y[yi] = v;
}
