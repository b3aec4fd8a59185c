// The second half of a conv GEMM with a split K (conv1d_gemm.wgsl with SPLIT > 1): adds the
// SPLIT partial sums of each output value in z order and applies the layer's epilogue
// (prepended with seq_view.wgsl and conv1d_common.wgsl). Grid: (column groups of 256, the
// step's rows of all sessions).

override SPLIT: u32 = 2u;

@group(0) @binding(12) var<storage, read> part: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let total = n_sessions() * p.rows_in;
    let flat = wid.y;
    let v = wid.x * 256u + li;
    if (flat >= total || v >= p.cols) {
        return;
    }
    var acc = 0.0;
    for (var z = 0u; z < SPLIT; z++) {
        acc += part[(z * total + flat) * p.cols + v];
    }
    store_output(flat / p.rows_in, flat % p.rows_in, v, acc);
}
