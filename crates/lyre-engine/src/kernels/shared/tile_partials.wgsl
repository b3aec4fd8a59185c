// The split-K store of the GEMM kernels (prepended after gemm_tile.wgsl or coop_tile.wgsl to a
// kernel that declares `part`): this thread's sums of block row `q`, raw, into the row of
// `part` that starts at `base`, at the tile's columns from `col0` that are below `cols`.
fn store_partial_row(tx: u32, ty: u32, q: u32, col0: u32, base: u32, cols: u32) {
    for (var j = 0u; j < TN / 4u; j++) {
        let v = acc_at(tx, ty, q, j);
        let c0 = col0 + block_col(tx, j);
        for (var e = 0u; e < 4u; e++) {
            if (c0 + e < cols) {
                part[base + c0 + e] = v[e];
            }
        }
    }
}
