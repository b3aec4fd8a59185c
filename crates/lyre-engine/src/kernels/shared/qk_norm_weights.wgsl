// The per-head RMSNorm weights of the q/k-norm + RoPE kernels (prepended to
// qk_norm_rope_common.wgsl's and attention_rope_sg.wgsl's kernels): bf16, two per u32.

@group(0) @binding(3) var<storage, read> q_norm: array<u32>;
@group(0) @binding(4) var<storage, read> k_norm: array<u32>;

// Weight i of q_norm (is_q) or k_norm.
fn norm_weight(is_q: bool, i: u32) -> f32 {
    var word: u32;
    if (is_q) {
        word = q_norm[i / 2u];
    } else {
        word = k_norm[i / 2u];
    }
    if (i % 2u == 0u) {
        return bitcast<f32>(word << 16u);
    }
    return bitcast<f32>(word & 0xffff0000u);
}
