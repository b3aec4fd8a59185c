// The conv GEMM's entry point (after conv1d_gemm_common.wgsl): one layer, its epilogue applied
// to the sums of each tile.
//
// SPLIT > 1 splits K (the chunks) over grid z for layers whose tile grid is too short to fill
// the GPU: each workgroup writes its raw sums to `part` ([z][session rows][cols]) and
// conv1d_split_reduce.wgsl adds them in z order and applies the epilogue.

override SPLIT: u32 = 1u;

@group(0) @binding(12) var<storage, read_write> part: array<f32>;

@compute @workgroup_size(THREADS)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let ns = n_sessions();
    let tx = li % 16u;
    let ty = li / 16u;
    let col0 = wid.x * BN;
    accumulate_conv(li, wid, ns, wid.z, SPLIT);
    // Block rows of each part of the sums (see flush_acc).
    let per_part = TM / CS_PARTS;
    for (var part = 0u; part < CS_PARTS; part++) {
        flush_acc(tx, ty, part);
        for (var q = part * per_part; q < (part + 1u) * per_part; q++) {
            let o = tile_row(wid, block_row(ty, q), ns);
            if (o.y == 0u) {
                continue;
            }
            if (SPLIT > 1u) {
                store_partial_row(tx, ty, q, col0, (wid.z * ns * p.rows_in + o.x) * p.cols, p.cols);
            } else {
                store_row(tx, ty, q, col0, o.x);
            }
        }
    }
}
