// y[r, n] (+)= act(bias[n] + sum_k in(x)[r, k] * w[n, k]), bf16 weights [n][k], for GPUs with
// subgroups: one subgroup per output column, its lanes striding over k four values at a time
// (coalesced 8-byte loads), up to 8 rows of x per pass so each weight is read once per tile,
// and a subgroupAdd at the end. SG must equal the adapter's (fixed) subgroup size.
// INPUT (matmul_common.wgsl): the RMS-normed mode also sums x^2 per lane and reduces it the same way.
//
// The accumulators are vec4s indexed only by constants: a private array indexed by a loop
// variable with a run-time bound lands in local memory on NVIDIA, which made every FMA a
// load and a store (measured on the H200).

override SG: u32 = 32u;

const WG: u32 = 256u;
const TILE_R: u32 = 8u;
var<workgroup> wg_rows: u32;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    if (t == 0u) {
        wg_rows = counts[p.rows_index];
    }
    let rows = workgroupUniformLoad(&wg_rows);
    let lane = t % SG;
    let n = wid.x * (WG / SG) + t / SG;
    let valid = n < p.n;
    let nn = min(n, p.n - 1u);
    let k4 = p.k / 4u;
    let wrow = nn * k4;
    for (var r0 = 0u; r0 < rows; r0 += TILE_R) {
        let nr = min(TILE_R, rows - r0);
        let last = r0 + nr - 1u;
        // Rows past the tile's last real row repeat it (cache hits, results dropped).
        let b0 = row_base(r0);
        let b1 = row_base(min(r0 + 1u, last));
        let b2 = row_base(min(r0 + 2u, last));
        let b3 = row_base(min(r0 + 3u, last));
        let b4 = row_base(min(r0 + 4u, last));
        let b5 = row_base(min(r0 + 5u, last));
        let b6 = row_base(min(r0 + 6u, last));
        let b7 = row_base(min(r0 + 7u, last));
        var lo = vec4<f32>(0.0);
        var hi = vec4<f32>(0.0);
        // Sums of squares of the rows' x (RMS-normed input only; zero otherwise).
        var qlo = vec4<f32>(0.0);
        var qhi = vec4<f32>(0.0);
        if (nr == 1u) {
            // Batch 1: two independent loads in flight per lane.
            var a0 = 0.0;
            var a1 = 0.0;
            var q0 = 0.0;
            var q1 = 0.0;
            var i = lane;
            for (; i + SG < k4; i += 2u * SG) {
                let x0 = x_in(b0, i);
                let x1 = x_in(b0, i + SG);
                a0 += dot(w_in(wrow, i), x0);
                a1 += dot(w_in(wrow, i + SG), x1);
                q0 += sq(x0);
                q1 += sq(x1);
            }
            if (i < k4) {
                let x0 = x_in(b0, i);
                a0 += dot(w_in(wrow, i), x0);
                q0 += sq(x0);
            }
            lo.x = a0 + a1;
            qlo.x = q0 + q1;
        } else if (nr <= 4u) {
            for (var i = lane; i < k4; i += SG) {
                let wf = w_in(wrow, i);
                let x0 = x_in(b0, i);
                let x1 = x_in(b1, i);
                let x2 = x_in(b2, i);
                let x3 = x_in(b3, i);
                lo += vec4<f32>(dot(wf, x0), dot(wf, x1), dot(wf, x2), dot(wf, x3));
                qlo += vec4<f32>(sq(x0), sq(x1), sq(x2), sq(x3));
            }
        } else {
            for (var i = lane; i < k4; i += SG) {
                let wf = w_in(wrow, i);
                let x0 = x_in(b0, i);
                let x1 = x_in(b1, i);
                let x2 = x_in(b2, i);
                let x3 = x_in(b3, i);
                let x4 = x_in(b4, i);
                let x5 = x_in(b5, i);
                let x6 = x_in(b6, i);
                let x7 = x_in(b7, i);
                lo += vec4<f32>(dot(wf, x0), dot(wf, x1), dot(wf, x2), dot(wf, x3));
                hi += vec4<f32>(dot(wf, x4), dot(wf, x5), dot(wf, x6), dot(wf, x7));
                qlo += vec4<f32>(sq(x0), sq(x1), sq(x2), sq(x3));
                qhi += vec4<f32>(sq(x4), sq(x5), sq(x6), sq(x7));
            }
        }
        let slo = subgroupAdd(lo);
        let shi = subgroupAdd(hi);
        var sqlo = qlo;
        var sqhi = qhi;
        if (INPUT == INPUT_RMS) {
            sqlo = subgroupAdd(qlo);
            sqhi = subgroupAdd(qhi);
        }
        if (lane == 0u && valid) {
            for (var r = 0u; r < nr; r++) {
                var s: f32;
                var q: f32;
                if (r < 4u) {
                    s = slo[r];
                    q = sqlo[r];
                } else {
                    s = shi[r - 4u];
                    q = sqhi[r - 4u];
                }
                finish(s * row_scale(q), n, r0 + r);
            }
        }
    }
}
