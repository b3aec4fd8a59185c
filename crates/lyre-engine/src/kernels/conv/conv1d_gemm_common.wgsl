// conv1d.wgsl as an implicit GEMM for layers with many rows (same math, parameters and epilogue;
// prepended after seq_view.wgsl, conv1d_common.wgsl, a weights file and gemm_tile.wgsl or
// coop_tile.wgsl; conv1d_gemm.wgsl and conv1d_unit.wgsl hold the entry points):
// C[rows × cols] = A · B with A[row][(m, c)] = x[row - m·dil][c] read through the views and B the
// packed weights. A workgroup computes BM rows × BN virtual columns; K runs over every tap m and
// the input channels in chunks of BK (BK / 4 groups of 4), and the next chunk's loads are in
// flight while the current one is multiplied. The tiles run over the step's rows of all
// sessions as one sequence (`y_rows` = BM rows per workgroup, grid y). Each thread stages
// X_LOADS vec4s of x per chunk (two where TM · BK = 128, four on the cooperative 128 × 128
// tile), in the order of tile_loads.wgsl. The weights are WeightVecs (f32, or f16 on
// cooperative matrices), loaded and staged as they are.

// Weight loads (vec4 of four input channels) per thread per chunk (at most 8).
override W_LOADS: u32 = BN * BK / 4u / THREADS;
override X_LOADS: u32 = BM * BK / 4u / THREADS;

// Flat row (session * rows_in + t) of tile row `i`, and whether it is one of the step's rows.
fn tile_row(wid: vec3<u32>, i: u32, ns: u32) -> vec2<u32> {
    let flat = wid.y * p.y_rows + i;
    let ok = i < p.y_rows && flat / p.rows_in < ns;
    return vec2<u32>(flat, u32(ok));
}

// First vec4 of the input row that tap m of (session s, row t) reads.
fn tap_base(s: u32, t: u32, m: u32) -> u32 {
    return row_offset(p.x, s, i32(t) - i32(m * p.dil)) / 4u;
}

// Clears the tile's sums and adds to them part `k_part` of `k_parts` of the chunks of K (all of
// them when `k_parts` is 1) for the tile at grid position `wid`.
fn accumulate_conv(li: u32, wid: vec3<u32>, ns: u32, k_part: u32, k_parts: u32) {
    let tx = li % 16u;
    let ty = li / 16u;
    let col0 = wid.x * BN;
    let kv = BK / 4u; // channel groups per chunk
    // x loads: load q of this thread is of tile row x_row(li, q), chunk-relative channel group
    // x_k4(li, q) (tile_loads.wgsl). A row past the step's rows stages the tile's first row
    // (always valid) and is never written.
    let first = tile_row(wid, 0u, ns).x;
    var flats = vec4<u32>(first);
    for (var q = 0u; q < X_LOADS; q++) {
        let r = tile_row(wid, x_row(li, q), ns);
        flats[q] = select(first, r.x, r.y != 0u);
    }
    let groups_per_tap = (p.cin4 + kv - 1u) / kv;
    let chunks = p.taps * groups_per_tap;
    let per_part = (chunks + k_parts - 1u) / k_parts;
    let c_begin = min(k_part * per_part, chunks);
    let c_end = min(c_begin + per_part, chunks);

    clear_acc();
    var at = ConvLoader(flats / p.rows_in, flats % p.rows_in, li, col0, groups_per_tap, 0u, vec4<u32>(0u));
    set_tap(&at, 0u);
    var regs = ConvRegs();
    if (c_begin < c_end) {
        regs = load_conv_chunk(&at, c_begin);
    }
    for (var j = c_begin; j < c_end; j++) {
        stage_conv_chunk(at, j, regs);
        workgroupBarrier();
        // Issue the next chunk's loads; they complete while chunk j is multiplied.
        if (j + 1u < c_end) {
            regs = load_conv_chunk(&at, j + 1u);
        }
        mma_chunk(j, tx, ty);
        release_chunk();
    }
}

// The epilogue of block row `q`, flat row `flat` of the step, at the tile's columns from col0.
fn store_row(tx: u32, ty: u32, q: u32, col0: u32, flat: u32) {
    let s = flat / p.rows_in;
    let t = flat % p.rows_in;
    // Without upsampling every column of the row lands in the same output row: find it
    // once, not per value (ring views cost two modulos each).
    var rows = vec3<u32>(0u);
    if (p.up == 1u) {
        rows = output_row(s, i32(t));
    }
    for (var jb = 0u; jb < TN / 4u; jb++) {
        let a = acc_at(tx, ty, q, jb);
        let c0 = col0 + block_col(tx, jb);
        for (var e = 0u; e < 4u; e++) {
            if (c0 + e < p.cols) {
                if (p.up == 1u) {
                    store_at(rows, c0 + e, a[e]);
                } else {
                    store_output(s, t, c0 + e, a[e]);
                }
            }
        }
    }
}

// Where one thread's loads of a chunk come from: the (session, row) of each of its X_LOADS x
// rows, its thread index and the tile's first column, and the tap whose input rows it last
// looked up with their first vec4s (row views cost modulos: the lookups are redone only when
// the tap changes).
struct ConvLoader {
    s: vec4<u32>,
    t: vec4<u32>,
    li: u32,
    col0: u32,
    groups_per_tap: u32,
    tap: u32,
    xb: vec4<u32>,
}

// One thread's loads of one chunk: X_LOADS vec4s of x and W_LOADS weight vectors.
struct ConvRegs {
    x: array<vec4<f32>, 4>,
    w: array<WeightVec, 8>,
}

fn set_tap(at: ptr<function, ConvLoader>, m: u32) {
    (*at).tap = m;
    for (var q = 0u; q < X_LOADS; q++) {
        (*at).xb[q] = tap_base((*at).s[q], (*at).t[q], m);
    }
}

fn load_conv_chunk(at: ptr<function, ConvLoader>, j: u32) -> ConvRegs {
    var r = ConvRegs();
    let m = j / (*at).groups_per_tap;
    let c0 = (j % (*at).groups_per_tap) * (BK / 4u);
    if (m != (*at).tap) {
        set_tap(at, m);
    }
    for (var q = 0u; q < 4u; q++) {
        if (q < X_LOADS) {
            let cg = c0 + x_k4((*at).li, q);
            r.x[q] = select(vec4<f32>(0.0), x[(*at).xb[q] + min(cg, p.cin4 - 1u)], cg < p.cin4);
        }
    }
    for (var q = 0u; q < 8u; q++) {
        if (q < W_LOADS) {
            let f = (*at).li + q * THREADS;
            let v = (*at).col0 + f % BN;
            let g = c0 + f / BN;
            let wv = w[(m * p.cin4 + min(g, p.cin4 - 1u)) * p.cols + min(v, p.cols - 1u)];
            r.w[q] = select(WeightVec(), wv, g < p.cin4 && v < p.cols);
        }
    }
    return r;
}

// Stages chunk j from the registers.
fn stage_conv_chunk(at: ConvLoader, j: u32, r: ConvRegs) {
    for (var q = 0u; q < 4u; q++) {
        if (q < X_LOADS) {
            stage_x(j, x_k4(at.li, q), x_row(at.li, q), r.x[q]);
        }
    }
    for (var q = 0u; q < 8u; q++) {
        if (q < W_LOADS) {
            let f = at.li + q * THREADS;
            stage_weight(j, f / BN, f % BN, r.w[q]);
        }
    }
}
