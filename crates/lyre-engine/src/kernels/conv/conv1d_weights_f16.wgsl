// The packed weights as f16 (PackedConv::weight_f16, already clamped and rounded as
// coop_tile.wgsl's to_f16 would), for the GEMM on cooperative matrices: the same layout as the
// f32 weights, half the bytes to load, and staged without a conversion.
@group(0) @binding(3) var<storage, read> w: array<WeightVec>;

alias WeightVec = vec4<f16>;

fn stage_weight(chunk: u32, k4: u32, col: u32, v: WeightVec) {
    stage_w16(chunk, k4, col, v);
}
