// The tiled variant of conv1d.wgsl for layers with many rows (same math, parameters and
// epilogue; prepended with seq_view.wgsl and conv1d_common.wgsl). A workgroup of 256 threads
// computes a tile of BM = 64 input rows × BN = 64 virtual columns; thread (tr, tc) holds a 4 × 4
// register block: rows tr + 16 i, columns tc + 16 j. For every tap and every chunk of KC = 8
// input-channel groups (32 channels), the workgroup stages the 64 x rows the tap reads (row
// t - m*dil of each tile row, through the views) and the 64 weight columns in workgroup memory,
// so each float loaded from global memory feeds 64 FMAs (each float read from workgroup memory
// 4) instead of 1 (x) or 4 (weights). Rows are tiled like conv1d.wgsl: `y_rows` rows per session in
// groups of BM (grid z), or BM rows of whole sessions per group.

const BM: u32 = 64u;
const BN: u32 = 64u;
const KC: u32 = 8u;
const THREADS: u32 = 256u;
// Tile rows staged by one thread per chunk (BM * KC / THREADS), spaced THREADS / KC apart.
const X_LOADS: u32 = 2u;
const X_STEP: u32 = 32u;

var<workgroup> xs: array<vec4<f32>, 512>; // [KC][BM]
var<workgroup> ws: array<vec4<f32>, 512>; // [KC][BN]

// Flat row (session * rows_in + t) of tile row `i`, or none past the tile's valid rows.
fn tile_row(wid: vec3<u32>, i: u32, ns: u32) -> vec2<u32> {
    let local = wid.z * BM + i;
    let flat = wid.y * p.y_rows + local;
    let ok = local < p.y_rows && flat / p.rows_in < ns;
    return vec2<u32>(flat, u32(ok));
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let ns = n_sessions();
    let tr = li / 16u;
    let tc = li % 16u;
    let col0 = wid.x * BN;
    // Staging roles. x: channel group `xk` of tile rows li / KC + X_STEP q; rows past the
    // valid ones stage the tile's first row (always valid) and are never written.
    let xk = li % KC;
    let first = tile_row(wid, 0u, ns).x;
    var xs_sess: array<u32, X_LOADS>;
    var xs_t: array<u32, X_LOADS>;
    for (var q = 0u; q < X_LOADS; q++) {
        let r = tile_row(wid, li / KC + X_STEP * q, ns);
        let flat = select(first, r.x, r.y != 0u);
        xs_sess[q] = flat / p.rows_in;
        xs_t[q] = flat % p.rows_in;
    }
    // w: column `wj` of channel groups li / BN + (THREADS / BN) q.
    let wj = li % BN;
    let wk = li / BN;
    let wv = col0 + wj;
    var acc: array<vec4<f32>, 4>;
    for (var i = 0u; i < 4u; i++) {
        acc[i] = vec4<f32>(0.0);
    }
    for (var m = 0u; m < p.taps; m++) {
        var xb: array<u32, X_LOADS>;
        for (var q = 0u; q < X_LOADS; q++) {
            xb[q] = row_offset(p.x, xs_sess[q], i32(xs_t[q]) - i32(m * p.dil)) / 4u;
        }
        for (var c0 = 0u; c0 < p.cin4; c0 += KC) {
            let c = c0 + xk;
            for (var q = 0u; q < X_LOADS; q++) {
                var xv = vec4<f32>(0.0);
                if (c < p.cin4) {
                    xv = x[xb[q] + c];
                }
                xs[xk * BM + li / KC + X_STEP * q] = xv;
            }
            for (var q = 0u; q < KC * BN / THREADS; q++) {
                let k = wk + (THREADS / BN) * q;
                var wval = vec4<f32>(0.0);
                if (c0 + k < p.cin4 && wv < p.cols) {
                    wval = w[(m * p.cin4 + c0 + k) * p.cols + wv];
                }
                ws[k * BN + wj] = wval;
            }
            workgroupBarrier();
            for (var k = 0u; k < KC; k++) {
                let b0 = ws[k * BN + tc];
                let b1 = ws[k * BN + tc + 16u];
                let b2 = ws[k * BN + tc + 32u];
                let b3 = ws[k * BN + tc + 48u];
                for (var i = 0u; i < 4u; i++) {
                    let a = xs[k * BM + tr + 16u * i];
                    acc[i] += vec4<f32>(dot(a, b0), dot(a, b1), dot(a, b2), dot(a, b3));
                }
            }
            workgroupBarrier();
        }
    }
    for (var i = 0u; i < 4u; i++) {
        let r = tile_row(wid, tr + 16u * i, ns);
        if (r.y == 0u) {
            continue;
        }
        let s = r.x / p.rows_in;
        let t = r.x % p.rows_in;
        for (var j = 0u; j < 4u; j++) {
            let v = col0 + tc + 16u * j;
            if (v < p.cols) {
                store_output(s, t, v, acc[i][j]);
            }
        }
    }
}
