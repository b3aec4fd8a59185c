// The weight and gamma bindings read four bf16 (one vec2<u32>) at a time, for the per-thread,
// subgroup and GEMM matmul kernels (prepended after matmul_common.wgsl).

@group(0) @binding(2) var<storage, read> w: array<vec2<u32>>;
@group(0) @binding(6) var<storage, read> gamma: array<vec2<u32>>;

// gamma[4i..4i+3] in the RMS-normed mode, else ones.
fn gamma4(i: u32) -> vec4<f32> {
    if (INPUT == INPUT_RMS) {
        return bf16x4(gamma[i]);
    }
    return vec4<f32>(1.0);
}

// The weights w[n, 4i..4i+3] of row `wrow` (= n * k / 4), times gamma in the RMS-normed mode.
fn w_in(wrow: u32, i: u32) -> vec4<f32> {
    let wf = bf16x4(w[wrow + i]);
    if (INPUT == INPUT_RMS) {
        return wf * bf16x4(gamma[i]);
    }
    return wf;
}
