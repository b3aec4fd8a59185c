// y[r, n] (+)= act(bias[n] + sum_k in(x)[r, k] * w[n, k]) for ticks of many rows: the
// register-blocked tile of gemm_tile.wgsl (BM rows × BN columns per workgroup) with bf16 weights
// [n][k]. Grid: (column tiles, row tiles, SPLIT). K must be a multiple of BK; each thread stages
// X_LOADS vec4s of one row of x per chunk: two where TM · BK = 128, four where it is 256 (the
// cooperative 128 × 128 tile, and the 64 × 128 one in chunks of 64).
//
// The loads of chunk c + 1 are issued into registers before chunk c is multiplied, so they are
// in flight during the FMAs; the input transform (gamma, SwiGLU gate) is applied when staging.
//
// SPLIT > 1 splits K over grid z: each workgroup writes its raw partial block to `part`
// ([z][rows][n]) and matmul_split_reduce.wgsl adds the partials in order and applies the
// epilogue. With SPLIT = 1 the epilogue is applied here; in the RMS-normed mode the row's sum of
// squares is gathered from the threads that staged its x.

override SPLIT: u32 = 1u;
// Weight loads (vec2 of four bf16) per thread per chunk: BN columns × BK / 4 / threads (≤ 8).
override W_LOADS: u32 = BN * BK / 4u / THREADS;
override X_LOADS: u32 = BM * BK / 4u / THREADS;

@group(0) @binding(7) var<storage, read_write> part: array<f32>;

// The only workgroup variable besides the tile's: 1 KiB, a multiple of 16 bytes (see
// coop_tile.wgsl; with a u32 beside it the cooperative tile's sums came back shifted by one
// column on an H200).
var<workgroup> row_sums: array<f32, 256>;

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    // Not used for control flow around barriers, so it need not be workgroup-uniform.
    let rows = counts[p.rows_index];
    let n0 = wid.x * BN;
    let r0 = wid.y * BM;
    let tx = t % 16u;
    let ty = t / 16u;
    let k4_all = p.k / 4u;
    let chunks = p.k / BK;
    let kv = BK / 4u; // vec4s of K per chunk
    let per_split = (chunks + SPLIT - 1u) / SPLIT;
    let c_begin = min(wid.z * per_split, chunks);
    let c_end = min(c_begin + per_split, chunks);

    // x loader: row xr of the tile, chunk-relative vec4s xk and xk2 (pairs of threads read 32
    // contiguous bytes of a row). Rows past the tick's last repeat it; they are not written.
    let xr = (t / 2u) % BM;
    let xk = 2u * (t / (2u * BM)) + t % 2u;
    let xk2 = 2u * ((t + THREADS) / (2u * BM)) + t % 2u;
    let xk3 = 2u * ((t + 2u * THREADS) / (2u * BM)) + t % 2u;
    let xk4 = 2u * ((t + 3u * THREADS) / (2u * BM)) + t % 2u;
    let xbase = row_base(min(r0 + xr, rows - 1u));
    // w loader q: thread t + q · THREADS of the chunk's BN × BK/4 vec2s, quads of threads
    // reading 32 contiguous bytes of a weight row.
    var wv: array<vec2<u32>, 8>;
    var x0 = vec4<f32>(0.0);
    var x1 = vec4<f32>(0.0);
    var u0 = vec4<f32>(0.0);
    var u1 = vec4<f32>(0.0);
    var x2 = vec4<f32>(0.0);
    var x3 = vec4<f32>(0.0);
    var u2 = vec4<f32>(0.0);
    var u3 = vec4<f32>(0.0);

    clear_acc();
    var ss = 0.0;
    var c = c_begin;
    if (c < c_end) {
        // Prologue: the first chunk's loads.
        x0 = x[xbase + c * kv + xk];
        x1 = x[xbase + c * kv + xk2];
        if (INPUT == INPUT_SWIGLU) {
            u0 = x[xbase + k4_all + c * kv + xk];
            u1 = x[xbase + k4_all + c * kv + xk2];
        }
        if (X_LOADS == 4u) {
            x2 = x[xbase + c * kv + xk3];
            x3 = x[xbase + c * kv + xk4];
            if (INPUT == INPUT_SWIGLU) {
                u2 = x[xbase + k4_all + c * kv + xk3];
                u3 = x[xbase + k4_all + c * kv + xk4];
            }
        }
        for (var q = 0u; q < 8u; q++) {
            if (q < W_LOADS) {
                wv[q] = w[w_index(t + q * THREADS, n0, c)];
            }
        }
    }
    for (; c < c_end; c++) {
        // Stage chunk c from the registers.
        ss += stage_input(c, xk, xr, x0, u0) + stage_input(c, xk2, xr, x1, u1);
        if (X_LOADS == 4u) {
            ss += stage_input(c, xk3, xr, x2, u2) + stage_input(c, xk4, xr, x3, u3);
        }
        for (var q = 0u; q < 8u; q++) {
            if (q < W_LOADS) {
                let f = t + q * THREADS;
                stage_w(c, 4u * (f / (4u * BN)) + f % 4u, (f / 4u) % BN, bf16x4(wv[q]));
            }
        }
        workgroupBarrier();
        // Issue chunk c + 1's loads, then multiply chunk c while they are in flight.
        if (c + 1u < c_end) {
            let next = (c + 1u) * kv;
            x0 = x[xbase + next + xk];
            x1 = x[xbase + next + xk2];
            if (INPUT == INPUT_SWIGLU) {
                u0 = x[xbase + k4_all + next + xk];
                u1 = x[xbase + k4_all + next + xk2];
            }
            if (X_LOADS == 4u) {
                x2 = x[xbase + next + xk3];
                x3 = x[xbase + next + xk4];
                if (INPUT == INPUT_SWIGLU) {
                    u2 = x[xbase + k4_all + next + xk3];
                    u3 = x[xbase + k4_all + next + xk4];
                }
            }
            for (var q = 0u; q < 8u; q++) {
                if (q < W_LOADS) {
                    wv[q] = w[w_index(t + q * THREADS, n0, c + 1u)];
                }
            }
        }
        mma_chunk(c, tx, ty);
        release_chunk();
    }
    // Block rows of each part of the sums (see flush_acc).
    let per_part = TM / CS_PARTS;

    if (SPLIT > 1u) {
        for (var part = 0u; part < CS_PARTS; part++) {
            flush_acc(tx, ty, part);
            for (var q = part * per_part; q < (part + 1u) * per_part; q++) {
                let row = r0 + block_row(ty, q);
                if (row < rows) {
                    store_partial_row(tx, ty, q, n0, (wid.z * rows + row) * p.n, p.n);
                }
            }
        }
        return;
    }
    if (INPUT == INPUT_RMS) {
        row_sums[t] = ss;
    }
    workgroupBarrier();
    for (var part = 0u; part < CS_PARTS; part++) {
        flush_acc(tx, ty, part);
        for (var q = part * per_part; q < (part + 1u) * per_part; q++) {
            store_row(tx, ty, q, r0, n0, rows);
        }
    }
}

// Stages the loaded x vec4 `v` (with `u`, its SwiGLU gate) of tile row `xr` at chunk-relative
// vec4 `k4` of chunk `c`, through the input transform and gamma; returns what it adds to the
// row's sum of squares.
fn stage_input(c: u32, k4: u32, xr: u32, v: vec4<f32>, u: vec4<f32>) -> f32 {
    let a = input_of(v, u);
    stage_x(c, k4, xr, a * gamma4(c * (BK / 4u) + k4));
    return sq(a);
}

// The epilogue of block row `q` of the tile at (r0, n0), if its row is one of the tick's.
fn store_row(tx: u32, ty: u32, q: u32, r0: u32, n0: u32, rows: u32) {
    let lr = block_row(ty, q);
    let row = r0 + lr;
    if (row >= rows) {
        return;
    }
    var scale = 1.0;
    if (INPUT == INPUT_RMS) {
        // Row lr was staged by threads 2 lr + 2 BM m and 2 lr + 1 + 2 BM m.
        var q2 = 0.0;
        for (var m = 0u; m < THREADS / (2u * BM); m++) {
            q2 += row_sums[2u * lr + 2u * BM * m] + row_sums[2u * lr + 1u + 2u * BM * m];
        }
        scale = row_scale(q2);
    }
    for (var j = 0u; j < TN / 4u; j++) {
        let v = acc_at(tx, ty, q, j) * scale;
        let c0 = n0 + block_col(tx, j);
        for (var e = 0u; e < 4u; e++) {
            if (c0 + e < p.n) {
                finish(v[e], c0 + e, row);
            }
        }
    }
}

// Index (in vec2s of four bf16) of weight load f of the chunk c of the tile at column n0:
// column (f / 4) % BN, vec2 4 (f / (4 BN)) + f % 4 of the chunk. Columns past n repeat the
// last (never written).
fn w_index(f: u32, n0: u32, c: u32) -> u32 {
    let n = min(n0 + (f / 4u) % BN, p.n - 1u);
    return n * (p.k / 4u) + c * (BK / 4u) + 4u * (f / (4u * BN)) + f % 4u;
}
