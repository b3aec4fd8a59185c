// conv1d.wgsl as an implicit GEMM for layers with many rows (same math, parameters and epilogue;
// prepended with seq_view.wgsl, conv1d_common.wgsl and gemm_tile.wgsl): C[rows × cols] = A · B
// with A[row][(m, c)] = x[row - m·dil][c] read through the views and B the packed weights. A
// workgroup of 256 threads computes 64 rows × 64 virtual columns; K runs over every tap m and
// the input channels in chunks of 32 (8 groups of 4), and the next chunk's loads are in flight
// while the current one is multiplied. Rows are tiled like conv1d.wgsl: `y_rows` rows per
// session in groups of 64 (grid z), or 64 rows of whole sessions per group.

// Flat row (session * rows_in + t) of tile row `i`, and whether it is one of the step's rows.
fn tile_row(wid: vec3<u32>, i: u32, ns: u32) -> vec2<u32> {
    let local = wid.z * BM + i;
    let flat = wid.y * p.y_rows + local;
    let ok = local < p.y_rows && flat / p.rows_in < ns;
    return vec2<u32>(flat, u32(ok));
}

// First vec4 of the input row that tap m of (session s, row t) reads.
fn tap_base(s: u32, t: u32, m: u32) -> u32 {
    return row_offset(p.x, s, i32(t) - i32(m * p.dil)) / 4u;
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let ns = n_sessions();
    let tx = li % 16u;
    let ty = li / 16u;
    let col0 = wid.x * GEMM_BN;
    // x loader: tile row xr, chunk-relative channel groups xk and xk + 4. A row past the step's
    // rows stages the tile's first row (always valid) and is never written.
    let xr = (li / 2u) % BM;
    let xk = 2u * (li / (2u * BM)) + li % 2u;
    let r = tile_row(wid, xr, ns);
    let flat = select(tile_row(wid, 0u, ns).x, r.x, r.y != 0u);
    let xs_s = flat / p.rows_in;
    let xs_t = flat % p.rows_in;
    // w loader q (0, 1): column li % 64, chunk-relative channel group li / 64 + 4 q.
    let wc = li % GEMM_BN;
    let wk = li / GEMM_BN;
    let groups_per_tap = (p.cin4 + 7u) / 8u;
    let chunks = p.taps * groups_per_tap;

    acc0 = vec4<f32>(0.0);
    acc1 = vec4<f32>(0.0);
    acc2 = vec4<f32>(0.0);
    acc3 = vec4<f32>(0.0);
    var tap = 0u;
    var xb = tap_base(xs_s, xs_t, 0u);
    var x0 = vec4<f32>(0.0);
    var x1 = vec4<f32>(0.0);
    var w0 = vec4<f32>(0.0);
    var w1 = vec4<f32>(0.0);
    for (var j = 0u; j <= chunks; j++) {
        if (j > 0u) {
            // Stage chunk j - 1 from the registers.
            stage_x(xk, xr, x0);
            stage_x(xk + 4u, xr, x1);
            stage_w(wk, wc, w0);
            stage_w(wk + 4u, wc, w1);
            workgroupBarrier();
        }
        if (j < chunks) {
            // Issue chunk j's loads; they complete while chunk j - 1 is multiplied.
            let m = j / groups_per_tap;
            let c0 = (j % groups_per_tap) * 8u;
            if (m != tap) {
                tap = m;
                xb = tap_base(xs_s, xs_t, m);
            }
            let ca = c0 + xk;
            x0 = select(vec4<f32>(0.0), x[xb + min(ca, p.cin4 - 1u)], ca < p.cin4);
            x1 = select(vec4<f32>(0.0), x[xb + min(ca + 4u, p.cin4 - 1u)], ca + 4u < p.cin4);
            let v = col0 + wc;
            let vc = min(v, p.cols - 1u);
            let ga = c0 + wk;
            let wa = w[(m * p.cin4 + min(ga, p.cin4 - 1u)) * p.cols + vc];
            let wb = w[(m * p.cin4 + min(ga + 4u, p.cin4 - 1u)) * p.cols + vc];
            w0 = select(vec4<f32>(0.0), wa, ga < p.cin4 && v < p.cols);
            w1 = select(vec4<f32>(0.0), wb, ga + 4u < p.cin4 && v < p.cols);
        }
        if (j > 0u) {
            mma_chunk(tx, ty);
            workgroupBarrier();
        }
    }
    for (var i = 0u; i < 4u; i++) {
        let o = tile_row(wid, 4u * ty + i, ns);
        if (o.y == 0u) {
            continue;
        }
        let s = o.x / p.rows_in;
        let t = o.x % p.rows_in;
        let a = acc_row(i);
        for (var c = 0u; c < 4u; c++) {
            let v = col0 + 4u * tx + c;
            if (v < p.cols) {
                store_output(s, t, v, a[c]);
            }
        }
    }
}
