// y[r, n] (+)= act(bias[n] + sum_k in(x)[r, k] * w[n, k]) for ticks of many rows: the
// register-blocked tile of gemm_tile.wgsl (BM rows × BN columns per workgroup) with bf16 weights
// [n][k]. Grid: (column tiles, row tiles, SPLIT). K must be a multiple of BK; each thread stages
// X_LOADS vec4s of x per chunk (two where TM · BK = 128, four where it is 256: the cooperative
// 128 × 128 tile, and the 64 × 128 one in chunks of 64) and W_LOADS vec2s of weights, in the
// order the tile's CONTIGUOUS_LOADS asks for (x_row, w_col).
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

// The only workgroup variables besides the tile's: 1.5 KiB, each a multiple of 16 bytes (see
// coop_tile.wgsl; with a u32 beside them the cooperative tile's sums came back shifted by one
// column on an H200). row_sums holds each thread's sum of squares in turn, row_ss each tile
// row's (RMS-normed mode).
var<workgroup> row_sums: array<f32, 256>;
var<workgroup> row_ss: array<f32, 128>;

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    // Not used for control flow around barriers, so it need not be workgroup-uniform.
    let rows = counts[p.rows_index];
    let n0 = wid.x * BN;
    let r0 = wid.y * BM;
    let tx = t % 16u;
    let ty = t / 16u;
    let chunks = p.k / BK;
    let kv = BK / 4u; // vec4s of K per chunk
    let per_split = (chunks + SPLIT - 1u) / SPLIT;
    let c_begin = min(wid.z * per_split, chunks);
    let c_end = min(c_begin + per_split, chunks);

    // x load q of this thread: tile row x_row(t, q), chunk-relative vec4 x_k4(t, q). Rows past
    // the tick's last repeat it; they are not written.
    var xb: array<u32, 4>;
    for (var q = 0u; q < 4u; q++) {
        xb[q] = row_base(min(r0 + x_row(t, q), rows - 1u));
    }
    var regs = GemmRegs();

    clear_acc();
    // The sums of squares of the rows this thread stages: one per x load where CONTIGUOUS_LOADS
    // (each load a row of its own), else all in .x (one row).
    var ss = vec4<f32>(0.0);
    var c = c_begin;
    if (c < c_end) {
        // Prologue: the first chunk's loads.
        regs = load_chunk(t, c, n0, xb);
    }
    for (; c < c_end; c++) {
        // Stage chunk c from the registers.
        // Where CONTIGUOUS_LOADS, every x load of a thread is at the same k: one gamma load.
        var g = gamma4(c * kv + x_k4(t, 0u));
        for (var q = 0u; q < 4u; q++) {
            if (q < X_LOADS) {
                let k4 = x_k4(t, q);
                if (!CONTIGUOUS_LOADS && q > 0u) {
                    g = gamma4(c * kv + k4);
                }
                let a = input_of(regs.x[q], regs.u[q]);
                stage_x(c, k4, x_row(t, q), a * g);
                if (CONTIGUOUS_LOADS) {
                    ss[q] += sq(a);
                } else {
                    ss.x += sq(a);
                }
            }
        }
        for (var q = 0u; q < 8u; q++) {
            if (q < W_LOADS) {
                let f = t + q * THREADS;
                stage_w(c, w_k4(f), w_col(f), bf16x4(regs.w[q]));
            }
        }
        workgroupBarrier();
        // Issue chunk c + 1's loads, then multiply chunk c while they are in flight.
        if (c + 1u < c_end) {
            regs = load_chunk(t, c + 1u, n0, xb);
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
        gather_row_sums(t, ss);
    }
    workgroupBarrier();
    for (var part = 0u; part < CS_PARTS; part++) {
        flush_acc(tx, ty, part);
        for (var q = part * per_part; q < (part + 1u) * per_part; q++) {
            store_row(tx, ty, q, r0, n0, rows);
        }
    }
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
        scale = row_scale(row_ss[lr]);
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

// Tile column and chunk-relative vec2 (of four bf16) of weight load f = t + q · THREADS: where
// CONTIGUOUS_LOADS, BK / 4 neighbouring threads read one column's chunk (a 128-byte line in
// chunks of 64); otherwise quads of threads read 32 contiguous bytes of a column.
fn w_col(f: u32) -> u32 {
    if (CONTIGUOUS_LOADS) {
        return f / (BK / 4u);
    }
    return (f / 4u) % BN;
}

fn w_k4(f: u32) -> u32 {
    if (CONTIGUOUS_LOADS) {
        return f % (BK / 4u);
    }
    return 4u * (f / (4u * BN)) + f % 4u;
}

// Index (in vec2s of four bf16) of weight load f of chunk c of the tile at column n0. Columns
// past n repeat the last (never written).
fn w_index(f: u32, n0: u32, c: u32) -> u32 {
    let n = min(n0 + w_col(f), p.n - 1u);
    return n * (p.k / 4u) + c * (BK / 4u) + w_k4(f);
}

// One thread's loads of one chunk: X_LOADS vec4s of x (and as many of their SwiGLU gates),
// W_LOADS vec2s of weights.
struct GemmRegs {
    x: array<vec4<f32>, 4>,
    u: array<vec4<f32>, 4>,
    w: array<vec2<u32>, 8>,
}

// Chunk c's loads of thread t, x from the rows whose first vec4s are `xb`.
fn load_chunk(t: u32, c: u32, n0: u32, xb: array<u32, 4>) -> GemmRegs {
    var r = GemmRegs();
    for (var q = 0u; q < 4u; q++) {
        if (q < X_LOADS) {
            let i = xb[q] + c * (BK / 4u) + x_k4(t, q);
            r.x[q] = x[i];
            if (INPUT == INPUT_SWIGLU) {
                r.u[q] = x[i + p.k / 4u];
            }
        }
    }
    for (var q = 0u; q < 8u; q++) {
        if (q < W_LOADS) {
            r.w[q] = w[w_index(t + q * THREADS, n0, c)];
        }
    }
    return r;
}

// Each tile row's sum of squares into row_ss, from the threads' sums `ss` (see main). Every
// thread calls it, in uniform control flow, after the K loop.
fn gather_row_sums(t: u32, ss: vec4<f32>) {
    if (CONTIGUOUS_LOADS) {
        // Load q's rows are q · per_load .. (q + 1) · per_load - 1, each read by BK / 4
        // neighbouring threads.
        let per_load = THREADS / (BK / 4u);
        for (var q = 0u; q < X_LOADS; q++) {
            row_sums[t] = ss[q];
            workgroupBarrier();
            if (t < per_load) {
                var s = 0.0;
                for (var j = 0u; j < BK / 4u; j++) {
                    s += row_sums[t * (BK / 4u) + j];
                }
                row_ss[q * per_load + t] = s;
            }
            workgroupBarrier();
        }
        return;
    }
    // Row r was staged by threads 2 r + 2 BM m and 2 r + 1 + 2 BM m.
    row_sums[t] = ss.x;
    workgroupBarrier();
    if (t < BM) {
        var s = 0.0;
        for (var m = 0u; m < THREADS / (2u * BM); m++) {
            s += row_sums[2u * t + 2u * BM * m] + row_sums[2u * t + 1u + 2u * BM * m];
        }
        row_ss[t] = s;
    }
}
