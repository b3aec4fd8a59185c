// The weight and gamma bindings of the kernels that load weights 16 bytes (eight bf16) at a time
// (matmul_bf16_vec.wgsl, matmul_bf16_few_rows.wgsl); needs k % 8 == 0.

@group(0) @binding(2) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read> gamma: array<vec4<u32>>;

// The eight weights `wv` (k = 8i..8i+7) as two vec4s, times gamma in the RMS-normed mode.
fn weights8(wv: vec4<u32>, i: u32) -> array<vec4<f32>, 2> {
    var lo = bf16x4(wv.xy);
    var hi = bf16x4(wv.zw);
    if (INPUT == INPUT_RMS) {
        let g = gamma[i];
        lo *= bf16x4(g.xy);
        hi *= bf16x4(g.zw);
    }
    return array<vec4<f32>, 2>(lo, hi);
}
