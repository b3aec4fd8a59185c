// y[r, n] (+)= act(bias[n] + sum_k in(x)[r, k] * w[n, k]) for ticks of a few dozen rows (batched
// decode), on GPUs. Each weight is loaded once per pass and used for 4·QP rows; the bound is the
// loads of x, so they are shared: a thread computes four rows (one row quad) of CPT columns, the
// QP quads of a column sit in neighbouring threads, and the threads of one quad read the same x
// address at the same time (one broadcast load for the whole subgroup, where a mat-vec lane
// reads its own). Per 16-byte load of x a thread does 4·CPT FMAs.
//
// Thread t of the workgroup: K part t / PART (SPLIT parts, added in workgroup memory in a fixed
// order), row quad u % QP and column group u / QP of u = t % PART. Ticks of more than 4·QP rows
// take several passes (weights re-read, from L2). Needs k % 8 == 0.
//
// Accumulators are named vec4s over a quad's four rows (constant indices only: a private array
// indexed by a loop variable lands in local memory on NVIDIA).

// Row quads per pass (1, 2, 4 or 8).
override QP: u32 = 8u;
// K parts per column (1, 2, 4 or 8).
override SPLIT: u32 = 1u;
// Columns per thread (1 or 2).
override CPT: u32 = 1u;

const WG: u32 = 256u;
const UNROLL: u32 = 4u;
override PART: u32 = WG / SPLIT;
override COLS: u32 = PART / QP * CPT;

var<workgroup> wg_rows: u32;
// Per thread: its columns' dot products, and its quad's sums of squares.
var<workgroup> part_dot: array<vec4<f32>, 512>;
var<workgroup> part_sq: array<vec4<f32>, 256>;

var<private> acc0: vec4<f32>;
var<private> acc1: vec4<f32>;
var<private> ssq: vec4<f32>;

// The dot products of the eight weights `w8` with the quad's rows `xs` (two vec4s per row).
fn dot_quad(w8: array<vec4<f32>, 2>, xs: array<vec4<f32>, 8>) -> vec4<f32> {
    return vec4<f32>(
        dot(w8[0], xs[0]) + dot(w8[1], xs[1]),
        dot(w8[0], xs[2]) + dot(w8[1], xs[3]),
        dot(w8[0], xs[4]) + dot(w8[1], xs[5]),
        dot(w8[0], xs[6]) + dot(w8[1], xs[7]));
}

// Adds k = 8i..8i+7 of the quad's rows (first vec4s at b0..b3) times the weights of the thread's
// columns: wa (column 0) and wb (column 1, when CPT = 2).
fn accumulate(wa: vec4<u32>, wb: vec4<u32>, i: u32, b0: u32, b1: u32, b2: u32, b3: u32) {
    let xs = array<vec4<f32>, 8>(
        x_in(b0, 2u * i), x_in(b0, 2u * i + 1u),
        x_in(b1, 2u * i), x_in(b1, 2u * i + 1u),
        x_in(b2, 2u * i), x_in(b2, 2u * i + 1u),
        x_in(b3, 2u * i), x_in(b3, 2u * i + 1u));
    acc0 += dot_quad(weights8(wa, i), xs);
    if (CPT == 2u) {
        acc1 += dot_quad(weights8(wb, i), xs);
    }
    if (INPUT == INPUT_RMS) {
        ssq += vec4<f32>(
            sq(xs[0]) + sq(xs[1]), sq(xs[2]) + sq(xs[3]), sq(xs[4]) + sq(xs[5]), sq(xs[6]) + sq(xs[7]));
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    if (t == 0u) {
        wg_rows = counts[p.rows_index];
    }
    let rows = workgroupUniformLoad(&wg_rows);
    let part = t / PART;
    let u = t % PART;
    let quad = u % QP;
    let n = wid.x * COLS + (u / QP) * CPT;
    let k8 = p.k / 8u;
    // Columns past n repeat the last one (loads only; never written).
    let w0 = min(n, p.n - 1u) * k8;
    let w1 = min(n + 1u, p.n - 1u) * k8;
    let per_part = (k8 + SPLIT - 1u) / SPLIT;
    let begin = min(part * per_part, k8);
    let end = min(begin + per_part, k8);
    for (var r0 = 0u; r0 < rows; r0 += 4u * QP) {
        // This quad's rows; those past the tick's last repeat it (cache hits, never written).
        let first = r0 + 4u * quad;
        let last = rows - 1u;
        let b0 = row_base(min(first, last));
        let b1 = row_base(min(first + 1u, last));
        let b2 = row_base(min(first + 2u, last));
        let b3 = row_base(min(first + 3u, last));
        acc0 = vec4<f32>(0.0);
        acc1 = vec4<f32>(0.0);
        ssq = vec4<f32>(0.0);
        var i = begin;
        for (; i + UNROLL <= end; i += UNROLL) {
            let a0 = w[w0 + i];
            let a1 = w[w0 + i + 1u];
            let a2 = w[w0 + i + 2u];
            let a3 = w[w0 + i + 3u];
            var c0 = a0;
            var c1 = a1;
            var c2 = a2;
            var c3 = a3;
            if (CPT == 2u) {
                c0 = w[w1 + i];
                c1 = w[w1 + i + 1u];
                c2 = w[w1 + i + 2u];
                c3 = w[w1 + i + 3u];
            }
            accumulate(a0, c0, i, b0, b1, b2, b3);
            accumulate(a1, c1, i + 1u, b0, b1, b2, b3);
            accumulate(a2, c2, i + 2u, b0, b1, b2, b3);
            accumulate(a3, c3, i + 3u, b0, b1, b2, b3);
        }
        for (; i < end; i++) {
            accumulate(w[w0 + i], w[w1 + i], i, b0, b1, b2, b3);
        }
        var d0 = acc0;
        var d1 = acc1;
        var q = ssq;
        if (SPLIT > 1u) {
            part_dot[2u * t] = acc0;
            part_dot[2u * t + 1u] = acc1;
            part_sq[t] = ssq;
            workgroupBarrier();
            d0 = vec4<f32>(0.0);
            d1 = vec4<f32>(0.0);
            q = vec4<f32>(0.0);
            for (var s = 0u; s < SPLIT; s++) {
                let o = s * PART + u;
                d0 += part_dot[2u * o];
                d1 += part_dot[2u * o + 1u];
                q += part_sq[o];
            }
            // The next pass overwrites the parts.
            workgroupBarrier();
        }
        if (part == 0u) {
            for (var j = 0u; j < 4u; j++) {
                let row = first + j;
                if (row >= rows) {
                    break;
                }
                let scale = row_scale(q[j]);
                if (n < p.n) {
                    finish(d0[j] * scale, n, row);
                }
                if (CPT == 2u && n + 1u < p.n) {
                    finish(d1[j] * scale, n + 1u, row);
                }
            }
        }
    }
}
