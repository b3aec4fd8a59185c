// The register-tile GEMM stages its f32 weights as gemm_tile.wgsl does.
fn stage_weight(c: u32, k4: u32, col: u32, v: WeightVec) {
    stage_w(c, k4, col, v);
}
