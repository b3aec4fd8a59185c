// bf16 values packed two per u32 (the checkpoints' weights), prepended to the kernels that read
// them: matmul_common.wgsl's and decode_layer.wgsl's.

// The four bf16 of `v` as f32s (a bf16 is the top half of an f32).
fn bf16x4(v: vec2<u32>) -> vec4<f32> {
    return vec4<f32>(
        bitcast<f32>(v.x << 16u), bitcast<f32>(v.x & 0xffff0000u),
        bitcast<f32>(v.y << 16u), bitcast<f32>(v.y & 0xffff0000u));
}
