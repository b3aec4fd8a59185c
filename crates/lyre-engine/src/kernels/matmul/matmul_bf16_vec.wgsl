// y[r, n] (+)= act(bias[n] + sum_k in(x)[r, k] * w[n, k]) for a few rows (batch-1 decode), on
// GPUs with subgroups. A mat-vec is bound by how many bytes are in flight, not by arithmetic:
// each lane reads 16 bytes (eight bf16) per load and issues four loads before it uses them, and
// when there are few output columns K is split over SPLIT subgroups per column, so every SM has
// enough loads in flight to cover the memory latency. The subgroups of a column meet in
// workgroup memory and add their sums in a fixed order. Needs k % 8 == 0.
//
// Accumulators are vec4s over the tile's four rows (constant indices only: a private array
// indexed by a loop variable lands in local memory on NVIDIA).

override SG: u32 = 32u;
// Subgroups per output column (1, 2, 4 or 8).
override SPLIT: u32 = 1u;

const WG: u32 = 256u;
const TILE_R: u32 = 4u;
const UNROLL: u32 = 4u;

var<workgroup> wg_rows: u32;
// Per subgroup: the rows' dot products and sums of squares.
var<workgroup> part_dot: array<vec4<f32>, 64>;
var<workgroup> part_sq: array<vec4<f32>, 64>;

var<private> acc: vec4<f32>;
var<private> ssq: vec4<f32>;

// Adds the eight weights `wv` times one row (first vec4 at b0) to acc.x.
fn accumulate1(wv: vec4<u32>, i: u32, b0: u32) {
    let w8 = weights8(wv, i);
    let xl = x_in(b0, 2u * i);
    let xh = x_in(b0, 2u * i + 1u);
    acc.x += dot(w8[0], xl) + dot(w8[1], xh);
    ssq.x += sq(xl) + sq(xh);
}

// Adds the eight weights `wv` times the tile's four rows (first vec4s at b0..b3).
fn accumulate4(wv: vec4<u32>, i: u32, b0: u32, b1: u32, b2: u32, b3: u32) {
    let w8 = weights8(wv, i);
    let lo = w8[0];
    let hi = w8[1];
    let x0l = x_in(b0, 2u * i);
    let x0h = x_in(b0, 2u * i + 1u);
    let x1l = x_in(b1, 2u * i);
    let x1h = x_in(b1, 2u * i + 1u);
    let x2l = x_in(b2, 2u * i);
    let x2h = x_in(b2, 2u * i + 1u);
    let x3l = x_in(b3, 2u * i);
    let x3h = x_in(b3, 2u * i + 1u);
    acc += vec4<f32>(
        dot(lo, x0l) + dot(hi, x0h),
        dot(lo, x1l) + dot(hi, x1h),
        dot(lo, x2l) + dot(hi, x2h),
        dot(lo, x3l) + dot(hi, x3h));
    ssq += vec4<f32>(sq(x0l) + sq(x0h), sq(x1l) + sq(x1h), sq(x2l) + sq(x2h), sq(x3l) + sq(x3h));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    if (t == 0u) {
        wg_rows = counts[p.rows_index];
    }
    let rows = workgroupUniformLoad(&wg_rows);
    let lane = t % SG;
    let sg = t / SG;
    let split = sg % SPLIT;
    let n = wid.x * (WG / SG / SPLIT) + sg / SPLIT;
    let valid = n < p.n;
    let k8 = p.k / 8u;
    let wrow = min(n, p.n - 1u) * k8;
    let per_split = (k8 + SPLIT - 1u) / SPLIT;
    let begin = min(split * per_split, k8);
    let end = min(begin + per_split, k8);
    for (var r0 = 0u; r0 < rows; r0 += TILE_R) {
        let last = min(r0 + TILE_R, rows) - 1u;
        // Rows past the tile's last real row repeat it (cache hits, results dropped).
        let b0 = row_base(r0);
        let b1 = row_base(min(r0 + 1u, last));
        let b2 = row_base(min(r0 + 2u, last));
        let b3 = row_base(min(r0 + 3u, last));
        acc = vec4<f32>(0.0);
        ssq = vec4<f32>(0.0);
        var i = begin + lane;
        if (last == r0) {
            // One row (batch-1 decode): only its x is loaded, two vec4s per weight load.
            for (; i + (UNROLL - 1u) * SG < end; i += UNROLL * SG) {
                let w0 = w[wrow + i];
                let w1 = w[wrow + i + SG];
                let w2 = w[wrow + i + 2u * SG];
                let w3 = w[wrow + i + 3u * SG];
                accumulate1(w0, i, b0);
                accumulate1(w1, i + SG, b0);
                accumulate1(w2, i + 2u * SG, b0);
                accumulate1(w3, i + 3u * SG, b0);
            }
            for (; i < end; i += SG) {
                accumulate1(w[wrow + i], i, b0);
            }
        } else {
            for (; i + (UNROLL - 1u) * SG < end; i += UNROLL * SG) {
                let w0 = w[wrow + i];
                let w1 = w[wrow + i + SG];
                let w2 = w[wrow + i + 2u * SG];
                let w3 = w[wrow + i + 3u * SG];
                accumulate4(w0, i, b0, b1, b2, b3);
                accumulate4(w1, i + SG, b0, b1, b2, b3);
                accumulate4(w2, i + 2u * SG, b0, b1, b2, b3);
                accumulate4(w3, i + 3u * SG, b0, b1, b2, b3);
            }
            for (; i < end; i += SG) {
                accumulate4(w[wrow + i], i, b0, b1, b2, b3);
            }
        }
        let d = subgroupAdd(acc);
        var q = ssq;
        if (INPUT == INPUT_RMS) {
            q = subgroupAdd(ssq);
        }
        var total = d;
        var total_sq = q;
        if (SPLIT > 1u) {
            if (lane == 0u) {
                part_dot[sg] = d;
                part_sq[sg] = q;
            }
            workgroupBarrier();
            total = vec4<f32>(0.0);
            total_sq = vec4<f32>(0.0);
            let first = sg - split;
            for (var s = 0u; s < SPLIT; s++) {
                total += part_dot[first + s];
                total_sq += part_sq[first + s];
            }
            // The next row tile overwrites the parts.
            workgroupBarrier();
        }
        if (lane == 0u && split == 0u && valid) {
            for (var r = 0u; r <= last - r0; r++) {
                finish(total[r] * row_scale(total_sq[r]), n, r0 + r);
            }
        }
    }
}
