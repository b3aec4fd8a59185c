// matmul_bf16_gemm.wgsl with K split over grid z (SPLIT > 1), without a second dispatch: every
// workgroup stores its raw partial block, and the last of a tile's SPLIT workgroups to arrive
// adds the partials in z order (so the result does not depend on which finished first) and
// applies the epilogue.
//
// The scratch buffer `part` holds, in 32-bit words: [0, TILE_COUNTERS) one arrival counter per
// tile of the grid (the last arrival resets it, so every counter is 0 between dispatches); then
// the RMS-normed mode's partial sums of squares [z][rows]; then the partial blocks
// [z][rows][n]. The partials cross workgroups within one dispatch, so they are stored and loaded
// with atomics: a plain load may return a line another workgroup's store has not reached in this
// one's L1 (decode_layer.wgsl met that on the H200). kernels/select/matmul.rs sizes the split
// to this layout.

@group(0) @binding(7) var<storage, read_write> part: array<atomic<u32>>;

const TILE_COUNTERS: u32 = 16384u;
const SUMSQ_AT: u32 = 16384u;
const PARTIALS_AT: u32 = 49152u;

fn store_partial(z: u32, rows: u32, row: u32, col: u32, v: f32) {
    atomicStore(&part[PARTIALS_AT + (z * rows + row) * p.n + col], bitcast<u32>(v));
}

fn load_partial(z: u32, rows: u32, row: u32, col: u32) -> f32 {
    return bitcast<f32>(atomicLoad(&part[PARTIALS_AT + (z * rows + row) * p.n + col]));
}

fn store_partial_sumsq(z: u32, rows: u32, row: u32, v: f32) {
    atomicStore(&part[SUMSQ_AT + z * rows + row], bitcast<u32>(v));
}

// Whether this workgroup is the last of tile `tile`'s SPLIT workgroups to arrive, after its
// partials are stored (workgroup-uniform). The last resets the tile's counter. The answer goes
// through row_sums[0] (every read of row_sums is before the barrier): the cooperative tile
// leaves no room for another workgroup variable.
fn last_of_tile(t: u32, tile: u32) -> bool {
    storageBarrier();
    if (t == 0u) {
        let arrived = atomicAdd(&part[tile], 1u);
        let last = arrived == SPLIT - 1u;
        if (last) {
            atomicStore(&part[tile], 0u);
        }
        row_sums[0] = select(0.0, 1.0, last);
    }
    return workgroupUniformLoad(&row_sums[0]) != 0.0;
}

// The tile at (r0, n0): the partials added in z order, scaled by the row's RMS factor (from
// its partial sums of squares, also in z order), through the epilogue.
fn finish_tile(t: u32, rows: u32, r0: u32, n0: u32) {
    storageBarrier();
    if (INPUT == INPUT_RMS) {
        if (t < BM && r0 + t < rows) {
            var q2 = 0.0;
            for (var z = 0u; z < SPLIT; z++) {
                q2 += bitcast<f32>(atomicLoad(&part[SUMSQ_AT + z * rows + r0 + t]));
            }
            row_sums[t] = row_scale(q2);
        }
        workgroupBarrier();
    }
    for (var i = t; i < BM * BN; i += THREADS) {
        let lr = i / BN;
        let row = r0 + lr;
        let col = n0 + i % BN;
        if (row < rows && col < p.n) {
            var v = 0.0;
            for (var z = 0u; z < SPLIT; z++) {
                v += load_partial(z, rows, row, col);
            }
            var scale = 1.0;
            if (INPUT == INPUT_RMS) {
                scale = row_sums[lr];
            }
            finish(v * scale, col, row);
        }
    }
}
