// y[r, n] (+)= act(bias[n] + sum_k in(x)[r, k] * w[n, k]) for ticks of many rows: the
// register-blocked tile of gemm_tile.wgsl (BM rows × 64 columns per workgroup, 4 × 4 per thread)
// with bf16 weights [n][k]. Grid: (column tiles, row tiles, SPLIT). K must be a multiple of 32.
//
// The loads of chunk c + 1 are issued into registers before chunk c is multiplied, so they are
// in flight during the FMAs; the input transform (gamma, SwiGLU gate) is applied when staging.
//
// SPLIT > 1 splits K over grid z: each workgroup writes its raw partial block to `part`
// ([z][rows][n]) and matmul_split_reduce.wgsl adds the partials in order and applies the
// epilogue. With SPLIT = 1 the epilogue is applied here; in the RMS-normed mode the row's sum of
// squares is gathered from the four threads that staged its x.

override SPLIT: u32 = 1u;
// Weight loads (vec2 of four bf16) per thread per chunk: 64 columns × 8 per chunk / (4 BM).
override W_LOADS: u32 = 128u / BM;

@group(0) @binding(7) var<storage, read_write> part: array<f32>;

var<workgroup> wg_rows: u32;
var<workgroup> row_sums: array<f32, 256>;

@compute @workgroup_size(4 * BM)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    if (t == 0u) {
        wg_rows = counts[p.rows_index];
    }
    let rows = workgroupUniformLoad(&wg_rows);
    let threads = 4u * BM;
    let n0 = wid.x * GEMM_BN;
    let r0 = wid.y * BM;
    let tx = t % 16u;
    let ty = t / 16u;
    let k4_all = p.k / 4u;
    let chunks = p.k / GEMM_BK;
    let per_split = (chunks + SPLIT - 1u) / SPLIT;
    let c_begin = min(wid.z * per_split, chunks);
    let c_end = min(c_begin + per_split, chunks);

    // x loader: row xr of the tile, chunk-relative vec4s xk and xk + 4 (pairs of threads read
    // 32 contiguous bytes of a row). Rows past the tick's last repeat it; they are not written.
    let xr = (t / 2u) % BM;
    let xk = 2u * (t / (2u * BM)) + t % 2u;
    let xbase = row_base(min(r0 + xr, rows - 1u));
    // w loader q: column wc(q) of the tile, chunk-relative vec2 wk(q); quads of threads read
    // 32 contiguous bytes of a weight row.
    var wv: array<vec2<u32>, 8>;
    var x0 = vec4<f32>(0.0);
    var x1 = vec4<f32>(0.0);
    var u0 = vec4<f32>(0.0);
    var u1 = vec4<f32>(0.0);

    acc0 = vec4<f32>(0.0);
    acc1 = vec4<f32>(0.0);
    acc2 = vec4<f32>(0.0);
    acc3 = vec4<f32>(0.0);
    var ss = 0.0;
    var c = c_begin;
    if (c < c_end) {
        // Prologue: the first chunk's loads.
        let i0 = c * 8u + xk;
        x0 = x[xbase + i0];
        x1 = x[xbase + i0 + 4u];
        if (INPUT == INPUT_SWIGLU) {
            u0 = x[xbase + k4_all + i0];
            u1 = x[xbase + k4_all + i0 + 4u];
        }
        for (var q = 0u; q < 8u; q++) {
            if (q < W_LOADS) {
                let f = t + q * threads;
                let col = (f / 4u) % GEMM_BN;
                let k4 = 4u * (f / 256u) + f % 4u;
                let n = min(n0 + col, p.n - 1u);
                wv[q] = w[n * k4_all + c * 8u + k4];
            }
        }
    }
    for (; c < c_end; c++) {
        // Stage chunk c from the registers.
        let i0 = c * 8u + xk;
        var a0 = x0;
        var a1 = x1;
        if (INPUT == INPUT_SWIGLU) {
            a0 = a0 / (1.0 + exp(min(-a0, vec4<f32>(80.0)))) * u0;
            a1 = a1 / (1.0 + exp(min(-a1, vec4<f32>(80.0)))) * u1;
        }
        ss += sq(a0) + sq(a1);
        stage_x(xk, xr, a0 * gamma4(i0));
        stage_x(xk + 4u, xr, a1 * gamma4(i0 + 4u));
        for (var q = 0u; q < 8u; q++) {
            if (q < W_LOADS) {
                let f = t + q * threads;
                let col = (f / 4u) % GEMM_BN;
                let k4 = 4u * (f / 256u) + f % 4u;
                stage_w(k4, col, bf16x4(wv[q]));
            }
        }
        workgroupBarrier();
        // Issue chunk c + 1's loads, then multiply chunk c while they are in flight.
        if (c + 1u < c_end) {
            let j0 = (c + 1u) * 8u + xk;
            x0 = x[xbase + j0];
            x1 = x[xbase + j0 + 4u];
            if (INPUT == INPUT_SWIGLU) {
                u0 = x[xbase + k4_all + j0];
                u1 = x[xbase + k4_all + j0 + 4u];
            }
            for (var q = 0u; q < 8u; q++) {
                if (q < W_LOADS) {
                    let f = t + q * threads;
                    let col = (f / 4u) % GEMM_BN;
                    let k4 = 4u * (f / 256u) + f % 4u;
                    let n = min(n0 + col, p.n - 1u);
                    wv[q] = w[n * k4_all + (c + 1u) * 8u + k4];
                }
            }
        }
        mma_chunk(tx, ty);
        workgroupBarrier();
    }

    if (SPLIT > 1u) {
        for (var i = 0u; i < 4u; i++) {
            let row = r0 + 4u * ty + i;
            if (row >= rows) {
                break;
            }
            let v = acc_row(i);
            let base = (wid.z * rows + row) * p.n;
            for (var j = 0u; j < 4u; j++) {
                let n = n0 + 4u * tx + j;
                if (n < p.n) {
                    part[base + n] = v[j];
                }
            }
        }
        return;
    }
    if (INPUT == INPUT_RMS) {
        row_sums[t] = ss;
    }
    workgroupBarrier();
    for (var i = 0u; i < 4u; i++) {
        let lr = 4u * ty + i;
        let row = r0 + lr;
        if (row >= rows) {
            break;
        }
        var scale = 1.0;
        if (INPUT == INPUT_RMS) {
            // Row lr was staged by threads 2 lr, 2 lr + 1, 2 lr + 2 BM, 2 lr + 2 BM + 1.
            let q = row_sums[2u * lr] + row_sums[2u * lr + 1u] + row_sums[2u * lr + 2u * BM]
                + row_sums[2u * lr + 2u * BM + 1u];
            scale = row_scale(q);
        }
        let v = acc_row(i) * scale;
        for (var j = 0u; j < 4u; j++) {
            let n = n0 + 4u * tx + j;
            if (n < p.n) {
                finish(v[j], n, row);
            }
        }
    }
}
