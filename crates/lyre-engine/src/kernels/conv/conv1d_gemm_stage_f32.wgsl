// The register-tile GEMM stages its f32 weights as gemm_tile.wgsl does.
fn stage_weight(chunk: u32, k4: u32, col: u32, v: WeightVec) {
    stage_w(chunk, k4, col, v);
}
