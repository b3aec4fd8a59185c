// A split-K matmul_bf16_gemm that adds its own partials (FUSED = 1; appended to that kernel):
// each workgroup stores its partial block as usual, then counts itself in its tile's arrival
// counter, and the last of the tile's SPLIT workgroups adds the partials in z order and applies
// the epilogue, as matmul_split_reduce.wgsl would in a dispatch of its own. The sums are the
// same bits as that kernel's (the same order); only the RMS scale's sum of squares is gathered
// from the parts' own sums instead of re-reading x.
//
// The last workgroup reads partials other workgroups wrote in this dispatch. A plain load is
// safe because no workgroup reads a tile's partials before that tile is complete, and a tile's
// rows of `part` share no cache line with another tile's (the host fuses only where n is a
// multiple of 32 floats): no stale line can be in any L1 (see decode_layer.wgsl on the grid
// barrier and L1).

override FUSED: u32 = 0u;
// Tile arrival counters in [0, SYNC_COUNTERS) (zero between dispatches: the last workgroup
// resets its tile's), then the parts' per-row sums of squares, [z][rows], as f32 bits.
@group(0) @binding(8) var<storage, read_write> split_sync: array<atomic<u32>>;
const SYNC_COUNTERS: u32 = 16384u;

// Whether this workgroup is its tile's last (16 bytes: see coop_tile.wgsl on workgroup
// variables).
var<workgroup> wg_last: vec4<u32>;

// Called by every thread after the workgroup's partial block is stored; `ss` is this thread's
// sum of squares of the x it staged (RMS-normed mode).
fn add_partials_if_last(wid: vec3<u32>, t: u32, ss: f32, rows: u32, r0: u32, n0: u32) {
    if (INPUT == INPUT_RMS) {
        row_sums[t] = ss;
        workgroupBarrier();
        if (t < BM && r0 + t < rows) {
            let at = SYNC_COUNTERS + wid.z * rows + r0 + t;
            atomicStore(&split_sync[at], bitcast<u32>(staged_row_sum(t)));
        }
    }
    storageBarrier();
    if (t == 0u) {
        let tile = wid.y * ((p.n + BN - 1u) / BN) + wid.x;
        var last = 0u;
        if (atomicAdd(&split_sync[tile], 1u) == SPLIT - 1u) {
            atomicStore(&split_sync[tile], 0u);
            last = 1u;
        }
        wg_last = vec4<u32>(last);
    }
    if (workgroupUniformLoad(&wg_last).x == 0u) {
        return;
    }
    storageBarrier();
    if (INPUT == INPUT_RMS) {
        // Row t's scale, from every part's sum of squares.
        if (t < BM && r0 + t < rows) {
            var q = 0.0;
            for (var z = 0u; z < SPLIT; z++) {
                q += bitcast<f32>(atomicLoad(&split_sync[SYNC_COUNTERS + z * rows + r0 + t]));
            }
            row_sums[t] = row_scale(q);
        }
        workgroupBarrier();
    }
    let live = min(BM, rows - r0);
    let per_row = BN / 4u;
    for (var i = t; i < live * per_row; i += THREADS) {
        let lr = i / per_row;
        let c = n0 + 4u * (i % per_row);
        if (c >= p.n) {
            continue;
        }
        let row = r0 + lr;
        var v = vec4<f32>(0.0);
        for (var z = 0u; z < SPLIT; z++) {
            let at = (z * rows + row) * p.n + c;
            v += vec4<f32>(part[at], part[at + 1u], part[at + 2u], part[at + 3u]);
        }
        var scale = 1.0;
        if (INPUT == INPUT_RMS) {
            scale = row_sums[lr];
        }
        for (var e = 0u; e < 4u; e++) {
            finish(v[e] * scale, c + e, row);
        }
    }
}
