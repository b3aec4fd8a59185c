// y[r, n] (+)= act(bias[n] + sum_k x[r, k] * w[n, k]), bf16 weights [n][k], for GPUs with
// subgroups: one subgroup per output column, its lanes striding over k four values at a time
// (coalesced 8-byte loads), TILE_R rows of x per pass so each weight is read once per tile,
// and a subgroupAdd at the end. SG must equal the adapter's (fixed) subgroup size.

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
        var acc = array<f32, TILE_R>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        var base: array<u32, TILE_R>;
        for (var r = 0u; r < TILE_R; r++) {
            base[r] = (p.x_offset + (r0 + min(r, nr - 1u)) * p.x_row_step * p.x_stride) / 4u;
        }
        // Only the tile's real rows: at batch 1 this is one dot per weight load.
        for (var i = lane; i < k4; i += SG) {
            let wf = bf16x4(w[wrow + i]);
            for (var r = 0u; r < nr; r++) {
                acc[r] += dot(wf, x[base[r] + i]);
            }
        }
        for (var r = 0u; r < TILE_R; r++) {
            let s = subgroupAdd(acc[r]);
            if (lane == 0u && valid && r < nr) {
                var v = s;
                if (p.has_bias != 0u) {
                    v += bias_at(n);
                }
                if (p.activation == 1u) {
                    v = v / (1.0 + exp(min(-v, 80.0)));
                }
                let yi = p.y_offset + (r0 + r) * p.y_stride + n;
                if (p.accumulate != 0u) {
                    v += y[yi];
                }
                y[yi] = v;
            }
        }
    }
}
